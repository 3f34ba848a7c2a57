package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/oar-operator/oar-operator/internal/resource"
	"github.com/oar-operator/oar-operator/internal/sidecar/kubeletdir"
)

// occurrences are what the agent host asks the sidecar: one allowed, one blocked, one
// transformed (config/samples/oar/occurrence-*.json).
var occurrences = []string{"occurrence-allowed.json", "occurrence-blocked.json", "occurrence-transformed.json"}

// askSidecar lays the published bundle ConfigMap out the way the kubelet mounts it,
// starts bin/oar-engine on it and sends it the sample occurrences.
func (t *tour) askSidecar(ctx context.Context) error {
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: namespace, Name: resource.BundleName("acme-gateway")}
	if err := t.env.Client.Get(ctx, key, cm); err != nil {
		return fmt.Errorf("%w: %v", errNoBundle, err)
	}
	dir := filepath.Join(t.dir, "bundle")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := kubeletdir.New(dir).Publish(cm.Data, cm.BinaryData); err != nil {
		return fmt.Errorf("lay out the bundle volume: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	step(t.out, "oar-engine --bundle-dir %s --port %d --probe-address \"\"", dir, port)
	p, err := start(ctx, t.env.Root, t.dir, "oar-engine", nil,
		"--bundle-dir="+dir, "--port="+strconv.Itoa(port), "--probe-address=")
	if err != nil {
		return err
	}
	t.procs = append(t.procs, p)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := p.waitFor(ctx, "ready", func() bool { return httpOK(base + "/readyz") }); err != nil {
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
	fmt.Fprintf(t.out, "\noar-engine serves at %s (POST /v1/evaluate, GET /v1/bundle, /metrics); its log: %s\n", base, p.log)
	return nil
}

// summarize prints the members of a decision a reader looks at first.
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
	if d.Decision == "none" {
		s += " (no rule fired: the call goes ahead)"
	}
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
