package sidecar

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/kubeletdir"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

// TestGracefulShutdown: when Run's context ends, the listener closes, event streams
// end, and a request already in flight is still answered.
func TestGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	b := gateBundle(t, "block")
	if err := kubeletdir.New(dir).PublishBundle(b); err != nil {
		t.Fatal(err)
	}
	base, sc, stop := startRun(t, Options{BundleDir: dir, ReloadInterval: time.Millisecond})
	testpoll.Until(t, 10*time.Second, time.Millisecond, "the first bundle", func() bool { return sc.Source().Current() != nil })
	addr := strings.TrimPrefix(base, "http://")

	stream, err := http.Get(base + "/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	streamed := bufio.NewReader(stream.Body)
	if l, _ := streamed.ReadString('\n'); !strings.HasPrefix(l, ": subscribed") {
		t.Fatalf("first line %q", l)
	}

	// A request in flight: its headers and half its body are sent before shutdown.
	body := occ("tool.pre_invoke", "s", `"tool_call": {"name": "shell"}`)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	half := len(body) / 2
	if _, err := fmt.Fprintf(conn, "POST /v1/evaluate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body[:half]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	testpoll.Until(t, 10*time.Second, time.Millisecond, "the listener to close", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	if _, err := io.ReadAll(streamed); err != nil {
		t.Errorf("the event stream did not end cleanly: %v", err)
	}

	if _, err := io.WriteString(conn, body[half:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the in-flight request was not answered: %v", err)
	}
	defer resp.Body.Close()
	a := Answer{Decision: &engine.Decision{}}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK || a.Decision.Decision != "block" || a.Bundle != b.Digest {
		t.Errorf("in-flight request: status %d, %+v, %v", resp.StatusCode, a.Decision, err)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return")
	}
}
