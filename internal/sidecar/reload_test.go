package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/kubeletdir"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
	"github.com/oar-operator/oar-operator/internal/sidecar/sidecartest"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

// gateRules is one rule whose effect differs between the two bundles of the reload
// tests, so every answer says which bundle gave it.
func gateBundle(t testing.TB, effect string) *bundle.Bundle {
	return sealed(t, testCapability, `
oar: "1.0"
namespace: acme.ops
id: GATE
kind: policy
anchor: tool.pre_invoke
selector: {tool: [shell]}
requires: {profiles: [tool]}
effect: `+effect)
}

// startRun runs the sidecar's whole server (Run) on a loopback port, watching dir.
func startRun(t *testing.T, opt Options) (base string, sc *Sidecar, stop func() error) {
	t.Helper()
	opt.Log = logr.Discard()
	sc = New(opt)
	base, stop = sidecartest.Serve(t, sc)
	return base, sc, stop
}

// TestReloadUnderLoad swaps the mounted directory between two bundles, the way the
// kubelet does, while many goroutines evaluate: no request fails, and every answer is
// the one its reported bundle gives, never a mix.
func TestReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	vol := kubeletdir.New(dir)
	blockB, warnB := gateBundle(t, "block"), gateBundle(t, "warn")
	want := map[string]string{blockB.Digest: "block", warnB.Digest: "warn"}
	if err := vol.PublishBundle(blockB); err != nil {
		t.Fatal(err)
	}
	base, sc, stop := startRun(t, Options{BundleDir: dir, ReloadInterval: time.Millisecond})
	testpoll.Until(t, 10*time.Second, time.Millisecond, "the first bundle", func() bool { return sc.Source().Current() != nil })

	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var total, failed atomic.Int64
	seen := sync.Map{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			body := occ("tool.pre_invoke", fmt.Sprintf("g%d", g), `"tool_call": {"name": "shell"}`)
			for ctx.Err() == nil {
				total.Add(1)
				digest, decision, err := post(client, base, body)
				switch {
				case err != nil:
					failed.Add(1)
					t.Errorf("request failed: %v", err)
				case want[digest] != decision:
					failed.Add(1)
					t.Errorf("bundle %s answered %s; its rules give %s", digest, decision, want[digest])
				default:
					seen.Store(digest, true)
				}
			}
		})
	}
	swaps := 0
	for ctx.Err() == nil {
		next := blockB
		if swaps%2 == 0 {
			next = warnB
		}
		if err := vol.PublishBundle(next); err != nil {
			t.Fatal(err)
		}
		swaps++
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	reloads := sc.Source().Status().Reloads
	t.Logf("%d requests, %d failed, %d directory swaps, %d reloads", total.Load(), failed.Load(), swaps, reloads)
	for d := range want {
		if _, ok := seen.Load(d); !ok {
			t.Errorf("no answer came from bundle %s", d)
		}
	}
	if reloads < 10 || sc.Source().Status().Failures != 0 {
		t.Errorf("status %+v after %d swaps", sc.Source().Status(), swaps)
	}
}

// post evaluates body and returns the answering digest and decision.
func post(c *http.Client, base, body string) (digest, decision string, err error) {
	resp, err := c.Post(base+"/v1/evaluate", "application/json", strings.NewReader(body))
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("status %d: %s", resp.StatusCode, data)
	}
	a := Answer{Decision: &engine.Decision{}}
	if err := json.Unmarshal(data, &a); err != nil {
		return "", "", err
	}
	if h := resp.Header.Get(DigestHeader); h != a.Bundle {
		return "", "", fmt.Errorf("header digest %s, body digest %s", h, a.Bundle)
	}
	return a.Bundle, a.Decision.Decision, nil
}

// TestRefusedBundleKeepsServing: a bundle the engine refuses, and one that does not
// even decode, leave the previous bundle serving and ready, with the failure in
// /v1/bundle, the metric and the log; the next good bundle is served.
func TestRefusedBundleKeepsServing(t *testing.T) {
	dir := t.TempDir()
	vol := kubeletdir.New(dir)
	logs := &syncBuffer{}
	ts := serve(t, nil, Options{BundleDir: dir, Log: logr.FromSlogHandler(slog.NewJSONHandler(logs, nil))})
	w := &reload.Watcher{Dir: dir, Source: ts.Source()}

	// Not ready until the first bundle: an empty directory is a failure.
	if w.Poll() || ts.Source().Current() != nil {
		t.Fatal("an empty directory loaded")
	}
	if r := ts.do(t, http.MethodGet, "/readyz", ""); r.status != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the first bundle: %d", r.status)
	}
	good := gateBundle(t, "block")
	if err := vol.PublishBundle(good); err != nil {
		t.Fatal(err)
	}
	if !w.Poll() {
		t.Fatal("the first bundle did not load")
	}

	bad := sealed(t, testCapability, `{oar: "1.0", namespace: acme.ops, id: BROKEN, kind: policy, anchor: tool.pre_invoke, when: "pth == 1", effect: warn}`)
	if err := vol.PublishBundle(bad); err != nil {
		t.Fatal(err)
	}
	if w.Poll() {
		t.Fatal("a bundle with an unknown identifier was swapped in")
	}
	if w.Poll() {
		t.Fatal("an unchanged directory was loaded again")
	}
	if a := ts.evaluate(t, occ("tool.pre_invoke", "s", `"tool_call": {"name": "shell"}`)); a.Bundle != good.Digest || a.Decision.Decision != "block" {
		t.Errorf("after a refused bundle: %s from %s", a.Decision.Decision, a.Bundle)
	}
	if r := ts.do(t, http.MethodGet, "/readyz", ""); r.status != http.StatusOK {
		t.Errorf("/readyz after a refused bundle: %d", r.status)
	}
	var info BundleInfo
	ts.do(t, http.MethodGet, "/v1/bundle", "").decode(t, &info)
	f := info.Status.LastFailure
	if info.Digest != good.Digest || info.Status.Failures != 2 || f == nil || !strings.Contains(f.Error, "OAR-FACT-3") ||
		len(f.Diagnostics) != 1 || f.Diagnostics[0].Stage != bundle.StageRules || f.Diagnostics[0].Owner != "acme-baseline" ||
		f.Diagnostics[0].Clause != "OAR-FACT-3" || f.Diagnostics[0].Field != "when" || f.Diagnostics[0].Rule != "acme.ops/BROKEN" {
		t.Errorf("/v1/bundle after a refused bundle: %+v, last failure %+v", info, f)
	}
	if got := ts.metric(t, "oar_engine_bundle_reload_failures_total", nil); got != 2 {
		t.Errorf("reload failures %v, want 2", got)
	}
	if !strings.Contains(logs.String(), `"msg":"bundle refused; the previous bundle keeps serving"`) ||
		!strings.Contains(logs.String(), `"serving":"`+good.Digest) ||
		!strings.Contains(logs.String(), "[OAR-FACT-3] unknown identifier") {
		t.Errorf("the refusal is not logged:\n%s", logs)
	}

	// A bundle whose content no longer matches its digest is refused at decode.
	swapRaw(t, vol, strings.Replace(encode(t, good), `"effect":"block"`, `"effect":"warn"`, 1))
	if w.Poll() {
		t.Fatal("a bundle with a wrong digest was swapped in")
	}
	if f := ts.Source().Status().LastFailure; !strings.Contains(f.Error, "digest mismatch") || len(f.Diagnostics) != 0 {
		t.Errorf("last failure %+v", f)
	}

	next := gateBundle(t, "warn")
	if err := vol.PublishBundle(next); err != nil {
		t.Fatal(err)
	}
	if !w.Poll() {
		t.Fatal("a good bundle after refused ones did not load")
	}
	if a := ts.evaluate(t, occ("tool.pre_invoke", "s", `"tool_call": {"name": "shell"}`)); a.Bundle != next.Digest || a.Decision.Decision != "warn" {
		t.Errorf("after recovery: %s from %s", a.Decision.Decision, a.Bundle)
	}
	st := ts.Source().Status()
	if st.Reloads != 2 || st.Failures != 3 || st.LastFailure == nil {
		t.Errorf("status %+v: the last failure stays visible after a success", st)
	}
	if got := ts.metric(t, "oar_engine_bundle_info", map[string]string{"digest": next.Digest}); got != 1 {
		t.Errorf("bundle_info for the served digest: %v", got)
	}
	if got := ts.metric(t, "oar_engine_bundle_info", map[string]string{"digest": good.Digest}); got != 0 {
		t.Errorf("bundle_info still reports the previous digest: %v", got)
	}
}

// TestBundleRefusedGauge: oar_engine_bundle_refused is 1 for as long as a refused bundle
// stays mounted, though the sidecar tries it once and the failure counter rises once,
// so an alert on it can outlast its for:; it falls to 0 when the served bundle is mounted
// again (a rollback) or a new bundle loads, and a later refusal raises it again.
func TestBundleRefusedGauge(t *testing.T) {
	dir := t.TempDir()
	vol := kubeletdir.New(dir)
	ts := serve(t, nil, Options{BundleDir: dir})
	w := &reload.Watcher{Dir: dir, Source: ts.Source()}
	good, next := gateBundle(t, "block"), gateBundle(t, "warn")
	bad := sealed(t, testCapability, `{oar: "1.0", namespace: acme.ops, id: BROKEN, kind: policy, anchor: tool.pre_invoke, when: "pth == 1", effect: warn}`)
	steps := []struct {
		name    string
		publish *bundle.Bundle
		polls   int
		refused float64
	}{
		{"the first bundle", good, 1, 0},
		{"a refused bundle, polled for a while", bad, 5, 1},
		{"the served bundle mounted again", good, 1, 0},
		{"a refused bundle again", bad, 1, 1},
		{"a new bundle that loads", next, 1, 0},
	}
	for _, step := range steps {
		if err := vol.PublishBundle(step.publish); err != nil {
			t.Fatal(err)
		}
		for range step.polls {
			w.Poll()
		}
		if got := ts.metric(t, "oar_engine_bundle_refused", nil); got != step.refused {
			t.Errorf("after %s: oar_engine_bundle_refused %v, want %v (status %+v)", step.name, got, step.refused, ts.Source().Status())
		}
	}
	if got := ts.metric(t, "oar_engine_bundle_reload_failures_total", nil); got != 2 {
		t.Errorf("reload failures %v, want 2: each refused directory state is tried once", got)
	}
}

func encode(t *testing.T, b *bundle.Bundle) string {
	t.Helper()
	enc, err := bundle.Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	return enc.Data[bundle.KeyPlain]
}

func swapRaw(t *testing.T, vol *kubeletdir.Dir, plain string) {
	t.Helper()
	if err := vol.Publish(map[string]string{bundle.KeyPlain: plain}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestPlainDirectoryRewrite: a directory without ..data (a volume written in place) is
// reloaded when its file changes.
func TestPlainDirectoryRewrite(t *testing.T) {
	dir := t.TempDir()
	ts := serve(t, nil, Options{BundleDir: dir})
	w := &reload.Watcher{Dir: dir, Source: ts.Source()}
	for i, effect := range []string{"block", "warn"} {
		b := gateBundle(t, effect)
		if err := os.WriteFile(filepath.Join(dir, bundle.KeyPlain), []byte(encode(t, b)), 0o644); err != nil {
			t.Fatal(err)
		}
		if !w.Poll() || ts.Source().Current().Digest() != b.Digest {
			t.Fatalf("write %d was not loaded", i)
		}
	}
}
