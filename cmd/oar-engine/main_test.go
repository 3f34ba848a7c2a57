package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/kubeletdir"
)

func TestHelpListsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, io.Discard, &out); code != exitOK {
		t.Fatalf("--help exits %d", code)
	}
	for _, want := range []string{"POST /v1/evaluate", "/readyz", "subPath",
		"-address", "-port", "-probe-address", "-bundle-dir", "-reload-interval", "-max-sessions",
		"-session-idle-ttl", "-max-counters-per-session", "-max-counters", "-max-body-bytes", "-event-buffer",
		"-shutdown-timeout", "-log-level", "-capability", "-rules", "-config",
		"-session-store", "-session-store-password-file", "-session-store-ca-file", "-session-store-prefix", "-session-store-timeout", "-session-store-pending-ttl", "-session-store-retries", "-session-store-cache"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestFlagErrors(t *testing.T) {
	// A Redis store the checks refuse before connecting to it.
	const redis = "redis://127.0.0.1:1"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--port", "70000"}, "--port 70000 is not a TCP port"},
		{[]string{"--max-sessions", "0", "--reload-interval", "0s"}, "--reload-interval must be positive; --max-sessions must be positive"},
		{[]string{"--session-idle-ttl", "-1s"}, "--session-idle-ttl must not be negative"},
		{[]string{"--log-level", "loud"}, `--log-level: "loud" is not one of`},
		{[]string{"--bundle-dir", ""}, "--bundle-dir is required"},
		{[]string{"--bundle-dir", "/b", "--capability", "c.yaml", "--rules", "r.yaml"}, "--bundle-dir and --capability/--rules/--config are exclusive"},
		{[]string{"--rules", "r.yaml"}, "standalone mode needs --capability and at least one --rules"},
		{[]string{"--session-store", "memcached://x"}, `--session-store "memcached://x" is neither memory nor a redis:// or rediss:// URL`},
		{[]string{"--session-store", "redis://u:pw@127.0.0.1:1"}, "carries a password: give it in a file"},
		{[]string{"--session-store-retries", "0"}, "--session-store-retries must be positive"},
		{[]string{"--session-store-cache", "-1"}, "--session-store-cache must not be negative"},
		{[]string{"--session-store", redis, "--session-store-pending-ttl", "0s"}, "--session-store-pending-ttl 0s is not a whole number of milliseconds, at least 1ms"},
		{[]string{"--session-store", redis, "--session-store-pending-ttl", "-5ms"}, "--session-store-pending-ttl -5ms is not a whole number of milliseconds"},
		{[]string{"--session-store", redis, "--session-store-pending-ttl", "2500us"}, "--session-store-pending-ttl 2.5ms is not a whole number of milliseconds"},
		{[]string{"--session-store", redis, "--session-store-pending-ttl", "250ms"}, "--session-store-pending-ttl 250ms is not below --session-store-timeout, 250ms"},
		{[]string{"--session-store", redis, "--session-store-timeout", "20ms", "--session-store-pending-ttl", "1s"}, "--session-store-pending-ttl 1s is not below --session-store-timeout, 20ms"},
		{[]string{"--session-store", redis, "--session-store-timeout", "4ms"}, "--session-store-pending-ttl 5ms (the default; lower it with --session-store-pending-ttl) is not below --session-store-timeout, 4ms"},
		{[]string{"--max-body-bytes", "67108865"}, "--max-body-bytes 67108865 is more than the 67108864 an occurrence may have"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--no-such-flag"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		if code := run(context.Background(), tt.args, io.Discard, &out); code != exitUsage || !strings.Contains(out.String(), tt.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d and %q", tt.args, code, out.String(), exitUsage, tt.want)
		}
	}
}

func TestDefaults(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.address != "127.0.0.1" || o.port != 8181 || o.probeAddress != ":8182" || o.bundleDir != "/etc/oar/bundle" ||
		o.reloadInterval != 2*time.Second || o.maxSessions != 100_000 || o.sessionIdleTTL != 30*time.Minute ||
		o.storeTimeout != 250*time.Millisecond || o.storePendingTTL != 5*time.Millisecond {
		t.Errorf("defaults %+v", o)
	}
	if o, err := parseFlags([]string{"--session-store-timeout", "1s", "--session-store-pending-ttl", "999ms"}, io.Discard); err != nil || o.storePendingTTL != 999*time.Millisecond {
		t.Errorf("a pending TTL just below the timeout: %v, %v", o.storePendingTTL, err)
	}
	// In memory the pending time does nothing: a timeout below it, or one that is no
	// whole number of milliseconds, stops no pod.
	for _, args := range [][]string{{"--session-store-timeout", "5ms"}, {"--session-store-timeout", "1ms", "--session-store-pending-ttl", "2500us"}} {
		if _, err := parseFlags(args, io.Discard); err != nil {
			t.Errorf("%v with the memory store: %v", args, err)
		}
	}
}

// TestRun starts the command on a free port against a mounted bundle, evaluates one
// occurrence whose rule publishes an event, and stops it as SIGTERM would: the event is
// a JSON line on stdout, the logs are JSON on stderr, and the exit is clean.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	b := &bundle.Bundle{
		Capability: map[string]any{"oar_capability_version": "1.0", "host": "acme.gateway", "profiles": []any{"tool"},
			"anchors": map[string]any{"core": map[string]any{"tool.pre_invoke": "tool.pre_invoke"},
				"unsupported": []any{"tool.handler", "tool.post_invoke", "agent.post_turn", "agent.finalize", "model.input", "model.output", "model.tool_result"}}},
		Packs: []bundle.Pack{{Name: "p", Generation: 1, Rules: []any{map[string]any{"oar": "1.0", "namespace": "acme.ops", "id": "AUDIT",
			"kind": "policy", "anchor": "tool.pre_invoke", "on_fire": []any{"publish_event"}, "effect": "warn"}}}},
		Configs: []bundle.Config{},
	}
	if err := b.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := kubeletdir.New(dir).PublishBundle(b); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"--port", "0", "--probe-address", "", "--bundle-dir", dir, "--reload-interval", "10ms"}, stdout, stderr)
	}()

	var addr string
	deadline := time.Now().Add(10 * time.Second)
	for addr == "" && time.Now().Before(deadline) {
		addr = servingAddress(stderr.String())
		time.Sleep(5 * time.Millisecond)
	}
	if addr == "" {
		t.Fatalf("no serving address logged:\n%s", stderr)
	}
	base := "http://" + addr
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Post(base+"/v1/evaluate", "application/json", strings.NewReader(`{"anchor": "tool.pre_invoke", "session_id": "s1"}`))
	if err != nil {
		t.Fatal(err)
	}
	var d engine.Decision
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || d.Decision != "warn" || resp.Header.Get("X-OAR-Bundle-Digest") != b.Digest {
		t.Errorf("decision %+v, %v, digest %q", d, err, resp.Header.Get("X-OAR-Bundle-Digest"))
	}
	resp.Body.Close()

	cancel()
	select {
	case code := <-exit:
		if code != exitOK {
			t.Errorf("exit %d:\n%s", code, stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("oar-engine did not stop")
	}
	if !strings.Contains(stdout.String(), `"rule":"acme.ops/AUDIT","anchor":"tool.pre_invoke","effect":"warn","session_id":"s1"}`) {
		t.Errorf("stdout lacks the event record:\n%s", stdout)
	}
	for _, want := range []string{`"msg":"bundle loaded"`, `"msg":"shutting down: refusing new connections, finishing in-flight requests"`, `"msg":"stopped"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %s:\n%s", want, stderr)
		}
	}
}

// servingAddress finds the API's address in the JSON logs.
func servingAddress(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line struct {
			Msg, Server, Address string
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" && line.Server == "api" {
			return line.Address
		}
	}
	return ""
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
