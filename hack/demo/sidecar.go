package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/oar-operator/oar-operator/internal/controller"
	"github.com/oar-operator/oar-operator/internal/sidecar"
	"github.com/oar-operator/oar-operator/internal/sidecar/kubeletdir"
)

// occurrences are what the agent host asks the sidecar: one allowed, one blocked, one
// transformed (config/samples/oar/occurrence-*.json).
var occurrences = []string{"occurrence-allowed.json", "occurrence-blocked.json", "occurrence-transformed.json"}

// askSidecar lays the published bundle ConfigMap out the way the kubelet mounts it,
// starts oar-engine's server on it and sends it the sample occurrences.
func (t *tour) askSidecar(ctx context.Context) error {
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: namespace, Name: controller.BundleName("acme-gateway")}
	if err := t.env.Client.Get(ctx, key, cm); err != nil {
		return fmt.Errorf("%w: %v", errNoBundle, err)
	}
	dir := filepath.Join(t.env.Root, "tmp", "demo", "bundle")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := kubeletdir.New(dir).Publish(cm.Data, cm.BinaryData); err != nil {
		return fmt.Errorf("lay out the bundle volume: %w", err)
	}
	step(t.out, "Starting oar-engine on the bundle (mounted at %s)", dir)
	s := sidecar.New(sidecar.Options{BundleDir: dir})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() {
		if err := s.Run(ctx, ln, nil); err != nil {
			fmt.Fprintln(os.Stderr, "demo: oar-engine:", err)
		}
	}()
	base := "http://" + ln.Addr().String()
	if err := waitReady(ctx, base+"/readyz"); err != nil {
		return err
	}
	for _, name := range occurrences {
		body, err := os.ReadFile(filepath.Join(t.env.Root, "config", "samples", "oar", name))
		if err != nil {
			return err
		}
		step(t.out, "curl -d @config/samples/oar/%s %s/v1/evaluate", name, base)
		resp, err := http.Post(base+"/v1/evaluate", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(t.out, "%s\n", summarize(answer))
	}
	fmt.Fprintf(t.out, "\noar-engine keeps serving at %s (POST /v1/evaluate, GET /v1/bundle, /metrics).\n", base)
	return nil
}

// summarize prints the members of a decision a reader looks at first, then the whole.
func summarize(answer []byte) string {
	var d struct {
		Decision string            `json:"decision"`
		Rule     string            `json:"rule"`
		Content  *string           `json:"content"`
		Copy     map[string]string `json:"copy"`
		Applied  []string          `json:"applied"`
	}
	if err := json.Unmarshal(answer, &d); err != nil {
		return string(answer)
	}
	s := fmt.Sprintf("decision: %s", d.Decision)
	if d.Rule != "" {
		s += fmt.Sprintf(" (rule %s)", d.Rule)
	}
	if d.Copy["what"] != "" {
		s += fmt.Sprintf("\n  what: %s", d.Copy["what"])
	}
	if d.Content != nil && d.Decision == "transform" {
		s += fmt.Sprintf("\n  content: %q", *d.Content)
	}
	return s + fmt.Sprintf("\n  applied: %v", d.Applied)
}

func waitReady(ctx context.Context, url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("oar-engine did not become ready at %s", url)
}
