package sidecar

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
	"github.com/oar-operator/oar-operator/internal/sidecar/session"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

func TestMain(m *testing.M) {
	redisstore.SetLogger(logr.Discard())
	redistest.Main(m)
}

// sharedStore is a store on url whose keys start with this run of the test's prefix
// (redistest.Prefix), so replicas of one test share sessions and other tests, and
// other runs of the same test (-count), do not. Its cache holds what
// --session-store-cache holds by default, unless opt says otherwise (a negative
// CacheSessions: none). Unless opt sets a Timeout, calls wait seconds, not the default
// quarter second, which a loaded two-core run of the suite can exceed.
func sharedStore(t testing.TB, url string, opt redisstore.Options) *redisstore.Store {
	t.Helper()
	if opt.Timeout == 0 {
		opt.Timeout = 5 * time.Second
	}
	opt.URL = url
	if opt.CacheSessions == 0 {
		opt.CacheSessions = redisstore.DefaultCacheSessions
	}
	if opt.Prefix == "" {
		opt.Prefix = redistest.Prefix(t)
	}
	s, err := redisstore.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// replicas starts n sidecars serving b whose sessions live in one Redis.
func replicas(t testing.TB, n int, url, rules string, opt redisstore.Options) []*testSidecar {
	t.Helper()
	b := sealed(t, testCapability, rules)
	out := make([]*testSidecar, n)
	for i := range out {
		out[i] = serve(t, b, Options{SharedSessions: sharedStore(t, url, opt)})
	}
	return out
}

// sendConcurrently posts bodies from clients concurrent clients, the i-th body to
// targets[(i+client)%len(targets)], so consecutive bodies (one session's calls) go out
// one after the other, to different clients and to every target, and are in flight
// together. Each answer must be a 200 without failures; answers[i] is the i-th body's.
func sendConcurrently(t *testing.T, targets []*testSidecar, bodies []string, clients int) []Answer {
	t.Helper()
	answers := make([]Answer, len(bodies))
	work := make(chan int)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range work {
				answers[i] = targets[(i+c)%len(targets)].evaluate(t, bodies[i])
				if len(answers[i].Failures) > 0 {
					t.Errorf("%s: %+v", bodies[i], answers[i].Failures)
				}
			}
		})
	}
	for i := range bodies {
		work <- i
	}
	close(work)
	wg.Wait()
	return answers
}

func shellCall(session string) string {
	return occ("tool.pre_invoke", session, `"tool_call": {"name": "shell", "arguments": {}}`)
}

// TestReplicasDecideAsOneEngine: 8 concurrent clients send the calls of 1,000 sessions
// alternately to two replicas on one Redis. testRules blocks a session's third shell
// call and later ones. Each answer reports the session's shell count after the call,
// so the counts a session's answers report must be exactly 1..N (the calls took effect
// one after the other, in some order), and a call is blocked exactly when its count is
// 3 or more, as one engine would decide those calls in that order. It holds with each
// replica's cache of sessions (stale at almost every call, since the other replica
// wrote last) and without one.
func TestReplicasDecideAsOneEngine(t *testing.T) {
	for name, cache := range map[string]int{"cached": redisstore.DefaultCacheSessions, "uncached": -1} {
		t.Run(name, func(t *testing.T) {
			// A generous timeout: on a loaded machine (or under -race) a round trip that
			// took longer than the default would send the call to on_error, which is
			// right for an engine and not what this test is about.
			replicasDecideAsOneEngine(t, redisstore.Options{IdleTTL: time.Hour, Timeout: 10 * time.Second, CacheSessions: cache})
		})
	}
}

func replicasDecideAsOneEngine(t *testing.T, opt redisstore.Options) {
	const sessions, calls, clients = 1000, 4, 8
	rs := replicas(t, 2, redistest.Shared(t).URL, testRules, opt)
	type result struct {
		count   int64
		blocked bool
	}
	bodies := make([]string, sessions*calls)
	for i := range bodies {
		bodies[i] = shellCall(fmt.Sprintf("s%d", i/calls))
	}
	results := make(map[string][]result, sessions)
	for i, a := range sendConcurrently(t, rs, bodies, clients) {
		session := fmt.Sprintf("s%d", i/calls)
		results[session] = append(results[session], result{a.Counters.Get("acme.ops/COUNT_SHELL").Fire, a.Decision.Decision == "block"})
	}
	blocked := 0
	for session, rr := range results {
		var counts []int64
		for _, r := range rr {
			counts = append(counts, r.count)
			if r.blocked != (r.count >= 3) {
				t.Errorf("%s: the call counted %d was blocked=%v", session, r.count, r.blocked)
			}
			if r.blocked {
				blocked++
			}
		}
		slices.Sort(counts)
		if !slices.Equal(counts, []int64{1, 2, 3, 4}) {
			t.Errorf("%s: counts %v, want 1..4: not one serial order", session, counts)
		}
	}
	if len(results) != sessions || blocked != sessions*(calls-2) {
		t.Errorf("%d sessions, %d calls blocked; want %d and %d", len(results), blocked, sessions, sessions*(calls-2))
	}
	conflicts := rs[0].metric(t, "oar_engine_session_store_conflicts_total", nil) + rs[1].metric(t, "oar_engine_session_store_conflicts_total", nil)
	if conflicts == 0 {
		t.Error("no commit conflicted: the replicas never evaluated one session at the same time, so the test proves nothing")
	}
	t.Logf("%d conflicts resolved by re-evaluation", int(conflicts))
}

const breakerRules = `
oar: "1.0"
namespace: acme.ops
id: TRIP
kind: policy
anchor: tool.pre_invoke
selector: {tool: [deploy]}
requires: {profiles: [tool]}
on_fire: [increment_breaker]
effect: warn
---
oar: "1.0"
namespace: acme.ops
id: OPEN
kind: invariant
anchor: tool.pre_invoke
requires: {profiles: [tool]}
when: breaker_count_of("acme.ops/TRIP") >= 1
effect: block
`

// TestBreakerTrippedOnOneReplicaIsOpenOnTheOther.
func TestBreakerTrippedOnOneReplicaIsOpenOnTheOther(t *testing.T) {
	rs := replicas(t, 2, redistest.Shared(t).URL, breakerRules, redisstore.Options{})
	read := occ("tool.pre_invoke", "s1", `"tool_call": {"name": "read", "arguments": {}}`)
	if d := rs[1].evaluate(t, read); d.Decision.Decision != "none" {
		t.Fatalf("before the trip: %+v", d.Decision)
	}
	if d := rs[0].evaluate(t, occ("tool.pre_invoke", "s1", `"tool_call": {"name": "deploy", "arguments": {}}`)); d.Decision.Decision != "warn" || d.Counters.Get("acme.ops/TRIP").Breaker != 1 {
		t.Fatalf("the trip: %+v", d.Decision)
	}
	if d := rs[1].evaluate(t, read); d.Decision.Decision != "block" || d.Rule != "acme.ops/OPEN" {
		t.Errorf("the other replica after the trip: %+v; the breaker is open", d.Decision)
	}
	if d := rs[1].evaluate(t, strings.Replace(read, "s1", "s2", 1)); d.Decision.Decision != "none" {
		t.Errorf("another session: %+v", d.Decision)
	}
}

const outageRules = testRules + `
---
oar: "1.0"
namespace: acme.audit
id: COUNT_READ
kind: policy
anchor: tool.pre_invoke
selector: {tool: [read]}
requires: {profiles: [tool]}
on_fire: [increment_counter]
on_error: fail_open
effect: warn
---
oar: "1.0"
namespace: acme.ops
id: NUDGE_WRITE
kind: policy
anchor: tool.pre_invoke
selector: {tool: [write]}
requires: {profiles: [tool]}
effect: nudge
---
oar: "1.0"
namespace: acme.ops
id: WARN_OUTPUT
kind: policy
anchor: model.output
effect: warn
`

// TestStoreOutage: with Redis stopped, the fail_closed rule needing state blocks and the
// fail_open one records its failure and lets the call through, neither claims a counter
// (nor says it may have been applied: a refused connection sent nothing),
// and rules needing no state decide as before (at an anchor with none, with no round
// trip at all); /readyz stays ready and says the store is unreachable. Restarted with
// its data, the next calls continue from the committed counts.
func TestStoreOutage(t *testing.T) {
	srv := redistest.StartT(t)
	rs := replicas(t, 1, srv.URL, outageRules, redisstore.Options{Timeout: 500 * time.Millisecond})
	r := rs[0]
	tool := func(name string) string {
		return occ("tool.pre_invoke", "s1", `"tool_call": {"name": "`+name+`", "arguments": {}}`)
	}
	for range 2 {
		if d := r.evaluate(t, tool("shell")); d.Decision.Decision != "warn" {
			t.Fatalf("before the outage: %+v", d.Decision)
		}
	}
	srv.Stop()

	start := time.Now()
	d := r.evaluate(t, tool("shell"))
	if d.Decision.Decision != "block" || d.Rule != "acme.ops/COUNT_SHELL" || len(d.Failures) != 1 ||
		d.Failures[0].Rule != "acme.ops/COUNT_SHELL" || !strings.Contains(d.Failures[0].Error, "session store is unreachable") || strings.Contains(d.Failures[0].Error, "may or may not") || len(d.Counters) != 0 || len(d.OnFire) != 0 {
		t.Errorf("a fail_closed rule needing state during the outage: %+v", d.Decision)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the occurrence took %v during the outage; the store's timeout is 500ms, and a stopped server refuses connections at once", took)
	}
	d = r.evaluate(t, tool("read"))
	if d.Decision.Decision != "none" || len(d.Failures) != 1 || d.Failures[0].Rule != "acme.audit/COUNT_READ" ||
		!slices.Contains(d.Applied, "acme.audit/COUNT_READ:errored") || len(d.Counters) != 0 {
		t.Errorf("a fail_open rule needing state during the outage: %+v", d.Decision)
	}
	if d := r.evaluate(t, tool("write")); d.Decision.Decision != "nudge" || len(d.Failures) != 0 {
		t.Errorf("a rule needing no state during the outage: %+v", d.Decision)
	}
	loads := r.metric(t, "oar_engine_session_store_duration_seconds", nil)
	if d := r.evaluate(t, occ("content.output", "s1", "")); d.Decision.Decision != "warn" || len(d.Failures) != 0 {
		t.Errorf("an anchor needing no state during the outage: %+v", d.Decision)
	}
	if after := r.metric(t, "oar_engine_session_store_duration_seconds", nil); after != loads {
		t.Errorf("an occurrence needing no session state called the store (%v calls, then %v)", loads, after)
	}
	if f := r.metric(t, "oar_engine_session_store_failures_total", map[string]string{"cause": "unreachable"}); f < 3 {
		t.Errorf("%v store failures counted unreachable, want at least 3", f)
	}
	var p Probe
	rr := r.do(t, http.MethodGet, "/readyz", "")
	rr.decode(t, &p)
	if rr.status != http.StatusOK || !strings.Contains(p.SessionStore, "unreachable") {
		t.Errorf("/readyz during the outage: %d %+v; ready, reporting the store", rr.status, p)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	testpoll.Until(t, 10*time.Second, 20*time.Millisecond, "the session store reachable again", func() bool {
		var p Probe
		r.do(t, http.MethodGet, "/readyz", "").decode(t, &p)
		return strings.HasSuffix(p.SessionStore, ": reachable")
	})
	d = r.evaluate(t, tool("shell"))
	if d.Decision.Decision != "block" || d.Rule != "acme.ops/SHELL_LIMIT" || d.Counters.Get("acme.ops/COUNT_SHELL").Fire != 3 {
		t.Errorf("the first shell call after the restart: %+v; the two committed calls make it the third", d.Decision)
	}
}

// TestServerTooOld: a store whose server is older than the store needs is unusable:
// the fail_closed rule needing state blocks, its failure says the store is unusable and
// why, with nothing committed nor said to be maybe applied (no call was sent), at the
// first call and at the next, which fails without a round trip; the metrics count both
// failures and the one round trip; /readyz stays ready and says the same.
func TestServerTooOld(t *testing.T) {
	r := replicas(t, 1, redistest.Shared(t).URL, outageRules, redisstore.Options{MinServerMajor: 256})[0]
	for i := range 2 {
		d := r.evaluate(t, occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {}}`))
		if d.Decision.Decision != "block" || len(d.Failures) != 1 || d.Failures[0].Rule != "acme.ops/COUNT_SHELL" ||
			!strings.Contains(d.Failures[0].Error, "the session store is unusable: ") || !strings.Contains(d.Failures[0].Error, "the session store needs Redis 5.0 or later") ||
			strings.Contains(d.Failures[0].Error, "may or may not") || len(d.Counters) != 0 {
			t.Errorf("call %d of a rule needing state with a server too old: %+v", i, d.Decision)
		}
	}
	load := map[string]string{"op": "load"}
	if failed, trips := r.metric(t, "oar_engine_session_store_failures_total", map[string]string{"op": "load", "cause": "unusable"}), r.metric(t, "oar_engine_session_store_duration_seconds", load); failed != 2 || trips != 1 {
		t.Errorf("the metrics count %v loads failed unusable and %v round trips; want 2, the second call failing without one", failed, trips)
	}
	var p Probe
	rr := r.do(t, http.MethodGet, "/readyz", "")
	rr.decode(t, &p)
	if rr.status != http.StatusOK || !strings.Contains(p.SessionStore, ": unusable (rules needing session state follow their on_error): ") ||
		!strings.Contains(p.SessionStore, "the session store needs Redis 5.0 or later") {
		t.Errorf("/readyz with a server too old: %d %+v; ready, reporting the store unusable", rr.status, p)
	}
}

// TestUnreadableVersionIsUnusable: a server whose version does not read is refused as
// one too old is, so the answer's failures and /readyz say the store is unusable,
// naming the version.
func TestUnreadableVersionIsUnusable(t *testing.T) {
	err := fmt.Errorf("reading session %q: %w", "s1", &redisstore.UnreadableVersionError{Version: "99999999999999999999.0.0"})
	if got := storeFailure(err).Error(); !strings.HasPrefix(got, "the session store is unusable: ") || !strings.Contains(got, `redis_version "99999999999999999999.0.0", which does not read as a version`) {
		t.Errorf("the failure of a call to a server whose version does not read: %s", got)
	}
}

// TestInfoRefusedByProxy: a store behind a proxy that refuses INFO with an error reply
// of its own wording is used, its version unread, even by a sidecar that would refuse
// every real version: the calls count as with any server, without failures, and
// /readyz says it is reachable, its version unchecked, quoting the proxy's reply.
func TestInfoRefusedByProxy(t *testing.T) {
	addr, _ := redistest.InfoAnswered(t, redistest.Shared(t).Addr, "ERR unsupported command")
	r := replicas(t, 1, "redis://"+addr, outageRules, redisstore.Options{MinServerMajor: 256})[0]
	for i := range 2 {
		d := r.evaluate(t, occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {}}`))
		if d.Decision.Decision != "warn" || len(d.Failures) != 0 || d.Counters.Get("acme.ops/COUNT_SHELL").Fire != int64(i+1) {
			t.Errorf("call %d of a rule needing state behind a proxy refusing INFO: %+v", i, d.Decision)
		}
	}
	var p Probe
	rr := r.do(t, http.MethodGet, "/readyz", "")
	rr.decode(t, &p)
	if want := `: reachable, its version unchecked (INFO answered "ERR unsupported command")`; rr.status != http.StatusOK || !strings.HasSuffix(p.SessionStore, want) {
		t.Errorf("/readyz behind a proxy refusing INFO: %d %+v; ready, the session store ending %q", rr.status, p, want)
	}
}

// TestStoreRefusingCalls: a server that answers with an error reply is reached, so
// the answer's failures and /readyz say it is refusing calls and name its reply, not
// that it is unreachable: here its answer to the version check of each new connection
// (LOADING, as a proxy may pass it on), which fails the call, sent nothing.
func TestStoreRefusingCalls(t *testing.T) {
	const loading = "LOADING Redis is loading the dataset in memory"
	addr, _ := redistest.InfoAnswered(t, redistest.Shared(t).Addr, loading)
	r := replicas(t, 1, "redis://"+addr, outageRules, redisstore.Options{})[0]
	d := r.evaluate(t, occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {}}`))
	if d.Decision.Decision != "block" || len(d.Failures) != 1 || d.Failures[0].Rule != "acme.ops/COUNT_SHELL" ||
		!strings.Contains(d.Failures[0].Error, ": the session store is refusing calls: ") || !strings.Contains(d.Failures[0].Error, loading) ||
		strings.Contains(d.Failures[0].Error, "may or may not") || len(d.Counters) != 0 {
		t.Errorf("a rule needing state with the server loading: %+v", d.Decision)
	}
	var p Probe
	rr := r.do(t, http.MethodGet, "/readyz", "")
	rr.decode(t, &p)
	if rr.status != http.StatusOK || !strings.Contains(p.SessionStore, ": refusing calls (rules needing session state follow their on_error): ") ||
		!strings.Contains(p.SessionStore, loading) {
		t.Errorf("/readyz with the server loading: %d %+v; ready, reporting the store refusing calls", rr.status, p)
	}
	if f := r.metric(t, "oar_engine_session_store_failures_total", map[string]string{"op": "load", "cause": "refusing"}); f != 1 {
		t.Errorf("%v loads counted failed refusing; want 1", f)
	}
}

// TestStoreNotAnsweringInTime: a server that takes the store's connections and never
// answers (here a proxy that swallows what it is sent) fails the calls as not
// answering in time once the timeout is up, in the answer's failures, /readyz and the
// failure metric's cause: the connection was had, so nothing says it is unreachable.
func TestStoreNotAnsweringInTime(t *testing.T) {
	addr := redistest.Silent(t)
	r := replicas(t, 1, "redis://"+addr, outageRules, redisstore.Options{Timeout: 100 * time.Millisecond})[0]
	d := r.evaluate(t, shellCall("s1"))
	if d.Decision.Decision != "block" || len(d.Failures) != 1 || d.Failures[0].Rule != "acme.ops/COUNT_SHELL" ||
		!strings.Contains(d.Failures[0].Error, "the session store is not answering in time: ") || len(d.Counters) != 0 {
		t.Errorf("a rule needing state with the server silent: %+v", d.Decision)
	}
	var p Probe
	rr := r.do(t, http.MethodGet, "/readyz", "")
	rr.decode(t, &p)
	if rr.status != http.StatusOK || !strings.Contains(p.SessionStore, ": not answering in time (rules needing session state follow their on_error): ") {
		t.Errorf("/readyz with the server silent: %d %+v; ready, reporting the store not answering in time", rr.status, p)
	}
	if f := r.metric(t, "oar_engine_session_store_failures_total", map[string]string{"op": "load", "cause": "timeout"}); f != 1 {
		t.Errorf("%v loads counted failed by timeout; want 1", f)
	}
}

// TestUnreadableSessionState: a session whose hash holds a counter no replica wrote
// (here "many", not two counts) fails its rules needing session state as the store
// holding unreadable state, naming the field, not as an unreachable store: the server
// answered, and the key is what needs looking at.
func TestUnreadableSessionState(t *testing.T) {
	srv := redistest.Shared(t)
	prefix := redistest.Prefix(t)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rc.Close()
	if err := rc.HSet(t.Context(), prefix+"s1", "v", "7", "cacme.ops/COUNT_SHELL", "many").Err(); err != nil {
		t.Fatal(err)
	}
	r := replicas(t, 1, srv.URL, outageRules, redisstore.Options{Prefix: prefix})[0]
	d := r.evaluate(t, shellCall("s1"))
	if len(d.Failures) != 1 || d.Failures[0].Rule != "acme.ops/COUNT_SHELL" ||
		!strings.Contains(d.Failures[0].Error, "the session store is holding unreadable state: ") ||
		!strings.Contains(d.Failures[0].Error, `counter "cacme.ops/COUNT_SHELL"`) || strings.Contains(d.Failures[0].Error, "unreachable") {
		t.Errorf("a session holding an unreadable counter: %+v", d.Decision)
	}
	if f := r.metric(t, "oar_engine_session_store_failures_total", map[string]string{"op": "load", "cause": "unreadable_state"}); f != 1 {
		t.Errorf("%v loads counted failed on unreadable state; want 1", f)
	}
	if d := r.evaluate(t, shellCall("s2")); len(d.Failures) != 0 || d.Counters.Get("acme.ops/COUNT_SHELL").Fire != 1 {
		t.Errorf("another session of the same store: %+v; unaffected", d.Decision)
	}
}

// TestIdleSessionIsForgotten: a session idle for --session-idle-ttl starts again from
// zero.
func TestIdleSessionIsForgotten(t *testing.T) {
	r := replicas(t, 1, redistest.Shared(t).URL, testRules, redisstore.Options{IdleTTL: 200 * time.Millisecond})[0]
	for range 2 {
		r.evaluate(t, shellCall("s1"))
	}
	if d := r.evaluate(t, shellCall("s1")); d.Decision.Decision != "block" {
		t.Fatalf("the third call: %+v", d.Decision)
	}
	time.Sleep(400 * time.Millisecond)
	if d := r.evaluate(t, shellCall("s1")); d.Decision.Decision != "warn" || d.Counters.Get("acme.ops/COUNT_SHELL").Fire != 1 {
		t.Errorf("after the idle TTL: %+v; the session starts again", d.Decision)
	}
}

// readOnlyBreakerRules trip a breaker on a deploy; the shell gate only reads it.
const readOnlyBreakerRules = `
oar: "1.0"
namespace: acme.ops
id: TRIP
kind: policy
anchor: tool.pre_invoke
selector: {tool: [deploy]}
requires: {profiles: [tool]}
on_fire: [increment_breaker]
effect: warn
---
oar: "1.0"
namespace: acme.ops
id: GATE
kind: invariant
anchor: tool.pre_invoke
selector: {tool: [shell]}
requires: {profiles: [tool]}
when: breaker_count_of("acme.ops/TRIP") >= 1
effect: block
`

// TestReadSessionStaysLikeMemory: a session whose tripped breaker every later call
// reads, and none writes, is in use: it outlives --session-idle-ttl in Redis (read from
// the replica's cache or not) as it does in memory, and the gate keeps blocking.
func TestReadSessionStaysLikeMemory(t *testing.T) {
	const ttl = time.Second
	b := sealed(t, testCapability, readOnlyBreakerRules)
	sidecars := map[string]*testSidecar{
		"memory":         serve(t, b, Options{Sessions: session.Options{IdleTTL: ttl}}),
		"redis cached":   serve(t, b, Options{SharedSessions: sharedStore(t, redistest.Shared(t).URL, redisstore.Options{IdleTTL: ttl})}),
		"redis uncached": serve(t, b, Options{SharedSessions: sharedStore(t, redistest.Shared(t).URL, redisstore.Options{IdleTTL: ttl, CacheSessions: -1})}),
	}
	deploy := occ("tool.pre_invoke", "s1", `"tool_call": {"name": "deploy", "arguments": {}}`)
	shell := occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {}}`)
	for _, r := range sidecars {
		r.evaluate(t, deploy)
	}
	// oar_engine_sessions and oar_engine_session_bytes are what the sidecar holds of
	// its sessions: in Redis, its cache of their states.
	for _, name := range []string{"oar_engine_sessions", "oar_engine_session_bytes"} {
		if cached, uncached := sidecars["redis cached"].metric(t, name, nil), sidecars["redis uncached"].metric(t, name, nil); cached <= 0 || uncached != 0 {
			t.Errorf("%s %v with a cache holding s1, %v without a cache", name, cached, uncached)
		}
	}
	for i := range 15 {
		time.Sleep(ttl / 10)
		for name, r := range sidecars {
			if d := r.evaluate(t, shell); d.Decision.Decision != "block" {
				t.Fatalf("%s, %v after the trip: %+v; the session is read every %v, so it stays", name, time.Duration(i+1)*ttl/10, d.Decision, ttl/10)
			}
		}
	}
}

// TestContentionPastTheRetryBound: a session another writer changes between every read
// and commit goes, after the bound, to each rule's on_error, named as contention.
func TestContentionPastTheRetryBound(t *testing.T) {
	url := redistest.Shared(t).URL
	b := sealed(t, testCapability, testRules)
	store := sharedStore(t, url, redisstore.Options{})
	r := serve(t, b, Options{SharedSessions: store, SessionRetries: 2})
	other := sharedStore(t, url, redisstore.Options{})
	store.SetObserver(&interferer{Observer: r.Metrics(), store: other, t: t})
	d := r.evaluate(t, shellCall("s1"))
	if d.Decision.Decision != "block" || len(d.Failures) != 1 || !strings.Contains(d.Failures[0].Error, "session store contention") ||
		!strings.Contains(d.Failures[0].Error, "at each of 3 attempts") {
		t.Errorf("a session contended past the bound: %+v", d.Decision)
	}
	if n := r.metric(t, "oar_engine_session_store_contention_exhausted_total", nil); n != 1 {
		t.Errorf("contention_exhausted_total %v", n)
	}
	if n := r.metric(t, "oar_engine_session_store_retries_total", nil); n != 2 {
		t.Errorf("retries_total %v, want 2", n)
	}
}

// interferer changes the session through another store after every read the replica
// makes — a load, or a refused commit, which returns the session for the next attempt
// — as a busy replica would.
type interferer struct {
	redisstore.Observer
	store *redisstore.Store
	t     *testing.T
}

func (i *interferer) RoundTrip(op string, took time.Duration, err error) {
	i.Observer.RoundTrip(op, took, err)
	if op == "load" {
		i.interfere()
	}
}

func (i *interferer) Conflict() {
	i.Observer.Conflict()
	i.interfere()
}

func (i *interferer) interfere() {
	snap, err := i.store.Load(i.t.Context(), "s1")
	if err != nil {
		i.t.Error(err)
		return
	}
	_, _ = snap.Apply(engine.CounterKey{Rule: "acme.other/X", Session: "s1"}, engine.ActionIncrementCounter)
	if _, err := i.store.Commit(i.t.Context(), snap); err != nil {
		i.t.Error(err)
	}
}

// differentialRules add a breaker, a scoped counter and a fail_open rule reading a
// counter to testRules.
const differentialRules = testRules + `
---
oar: "1.0"
namespace: acme.ops
id: TRIP
kind: policy
anchor: tool.pre_invoke
selector: {tool: [deploy]}
requires: {profiles: [tool]}
on_fire: [increment_breaker, publish_event]
effect: warn
---
oar: "1.0"
namespace: acme.ops
id: RESET_ON_READ
kind: policy
anchor: tool.pre_invoke
selector: {tool: [read]}
requires: {profiles: [tool]}
when: breaker_count_of("acme.ops/TRIP") >= 2
on_fire: [reset_breaker]
effect: nudge
---
oar: "1.0"
namespace: acme.ops
id: PER_TIER
kind: policy
anchor: model.output
requires: {facts: [acme.gateway.tenant_tier]}
counter_scope: acme.gateway.tenant_tier
when: fire_count >= 1
on_fire: [increment_counter, publish_event]
effect: warn
`

// TestDifferentialMemoryAndRedis: one random workload through a memory-store sidecar
// and a Redis-store sidecar gives identical answers (decisions, counters, events) and
// identical event streams.
func TestDifferentialMemoryAndRedis(t *testing.T) {
	b := sealed(t, testCapability, differentialRules)
	mem := serve(t, b, Options{})
	red := serve(t, b, Options{SharedSessions: sharedStore(t, redistest.Shared(t).URL, redisstore.Options{})})
	rnd := rand.New(rand.NewPCG(16, 2026))
	tools := []string{"shell", "read", "deploy", "web_fetch", "write"}
	tiers := []string{"free", "pro"}
	for i := range 1500 {
		session := fmt.Sprintf("s%d", rnd.IntN(25))
		var o string
		switch rnd.IntN(5) {
		case 0:
			o = occ("content.output", session, fmt.Sprintf(`"facts": {"acme.gateway.tenant_tier": %q}, "content": "hi"`, tiers[rnd.IntN(2)]))
		case 1:
			o = occ("gateway.pre_render", session, "")
		default:
			o = occ("tool.pre_invoke", session, fmt.Sprintf(`"tool_call": {"name": %q, "arguments": {}}`, tools[rnd.IntN(len(tools))]))
		}
		m, r := mem.do(t, http.MethodPost, "/v1/evaluate", o), red.do(t, http.MethodPost, "/v1/evaluate", o)
		if m.status != r.status || string(m.body) != string(r.body) {
			t.Fatalf("occurrence %d %s:\nmemory %d %s\nredis  %d %s", i, o, m.status, m.body, r.status, r.body)
		}
	}
	if me, re := withoutTimes(t, mem.events.String()), withoutTimes(t, red.events.String()); me != re || me == "" {
		t.Errorf("event streams differ:\nmemory %s\nredis  %s", me, re)
	}
}

// withoutTimes drops the time of each event record.
func withoutTimes(t *testing.T, lines string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		delete(rec, "time")
		b, _ := json.Marshal(rec)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// TestRefusedEventDecidesLikeMemory: with shared sessions an event is written once the
// session's changes are committed; one the stream then refuses makes its rule one that
// cannot be evaluated ([OAR-FIRE-9]), which contributes no side-effect ([OAR-OPS-4]),
// exactly as with the memory store: COUNT_SHELL is errored, fail_closed blocks
// ([OAR-OPS-3]), and its committed increment is taken back.
func TestRefusedEventDecidesLikeMemory(t *testing.T) {
	b := sealed(t, testCapability, testRules)
	mem := serve(t, b, Options{Events: failingWriter{}})
	red := serve(t, b, Options{Events: failingWriter{}, SharedSessions: sharedStore(t, redistest.Shared(t).URL, correctInTime)})
	m, r := mem.evaluate(t, shellCall("s1")), red.evaluate(t, shellCall("s1"))
	if r.Decision.Decision != "block" || r.Rule != "acme.ops/COUNT_SHELL" || len(r.Events) != 0 || len(r.OnFire) != 0 || len(r.Counters) != 0 ||
		len(r.Failures) != 1 || r.Failures[0].Clause != "OAR-FIRE-9" || !strings.Contains(r.Failures[0].Error, "disk full") {
		t.Errorf("redis answer %+v", r.Decision)
	}
	if mj, rj := decisionJSON(t, m), decisionJSON(t, r); mj != rj {
		t.Errorf("memory decides\n%s\nredis decides\n%s", mj, rj)
	}
	if d := red.evaluate(t, shellCall("s1")); d.Decision.Decision != "block" || len(d.Counters) != 0 {
		t.Errorf("the next call %+v; the first call's increment was taken back, so there is none to report", d.Decision)
	}
}

// correctInTime are store options under which a correction never comes after its
// commit's pending time, however busy the machine running the tests.
var correctInTime = redisstore.Options{PendingTTL: time.Minute, Timeout: 2 * time.Minute}

// refusingWriter refuses the writes whose numbers (from 1) it holds and takes the
// others, counting the lines it took.
type refusingWriter struct {
	mu      sync.Mutex
	n       int
	refuse  map[int]bool
	written int
}

func (w *refusingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if w.refuse[w.n] {
		return 0, fmt.Errorf("write %d refused", w.n)
	}
	w.written++
	return len(p), nil
}

// threePublishers count and publish an event each, failing open.
const threePublishers = `
oar: "1.0"
namespace: acme.ops
id: A
kind: policy
anchor: tool.pre_invoke
selector: {tool: [shell]}
requires: {profiles: [tool]}
on_fire: [increment_counter, publish_event]
on_error: fail_open
effect: warn
---
oar: "1.0"
namespace: acme.ops
id: B
kind: policy
anchor: tool.pre_invoke
selector: {tool: [shell]}
requires: {profiles: [tool]}
on_fire: [increment_counter, publish_event]
on_error: fail_open
effect: nudge
---
oar: "1.0"
namespace: acme.ops
id: C
kind: policy
anchor: tool.pre_invoke
selector: {tool: [shell]}
requires: {profiles: [tool]}
on_fire: [increment_breaker, publish_event]
on_error: fail_open
effect: warn
`

// TestPartlyRefusedEventsDecideLikeMemory: a stream that takes an occurrence's first
// event and refuses the second and the third gives the same decisions, the same
// counters afterwards and the same lines written with the memory store and with Redis:
// the rules whose events were refused contribute nothing ([OAR-OPS-4]), the event taken
// is written once, and the third refusal, met only once the second was taken into
// account, is handled the same way.
func TestPartlyRefusedEventsDecideLikeMemory(t *testing.T) {
	b := sealed(t, testCapability, threePublishers)
	memW, redW := &refusingWriter{refuse: map[int]bool{2: true, 3: true}}, &refusingWriter{refuse: map[int]bool{2: true, 3: true}}
	mem := serve(t, b, Options{Events: memW})
	red := serve(t, b, Options{Events: redW, SharedSessions: sharedStore(t, redistest.Shared(t).URL, correctInTime)})
	for call := 1; call <= 2; call++ {
		m, r := mem.evaluate(t, shellCall("s1")), red.evaluate(t, shellCall("s1"))
		if mj, rj := decisionJSON(t, m), decisionJSON(t, r); mj != rj {
			t.Errorf("call %d: memory decides\n%s\nredis decides\n%s", call, mj, rj)
		}
		if call == 1 && (len(r.Failures) != 2 || len(r.Events) != 1 || len(r.Counters) != 1) {
			t.Errorf("call 1: %+v; want two rules errored and one counted and published", r.Decision)
		}
	}
	if memW.written != 4 || redW.written != memW.written {
		t.Errorf("%d lines written with memory, %d with Redis; want 4 each (1 of the first call, 3 of the second)", memW.written, redW.written)
	}
}

// TestRefusedEventAfterAnotherReplicasChange: when another replica changed the session
// between the commit and the stream's refusal, the committed changes cannot be taken
// back without undoing what it built on them; the committed decision then stands, with
// the refused event dropped from its events and on_fire, and its failure says the
// changes stayed and why ([OAR-FIRE-9]).
func TestRefusedEventAfterAnotherReplicasChange(t *testing.T) {
	srv := redistest.Shared(t)
	url, prefix := srv.URL, redistest.Prefix(t)
	store := sharedStore(t, url, redisstore.Options{Prefix: prefix})
	r := serve(t, sealed(t, testCapability, testRules), Options{Events: failingWriter{}, SharedSessions: store})
	store.SetObserver(&interfereAfterCommit{interferer: interferer{Observer: r.Metrics(), store: sharedStore(t, url, redisstore.Options{}), t: t}})
	d := r.evaluate(t, shellCall("s1"))
	if d.Decision.Decision != "warn" || len(d.Events) != 0 || !slices.Equal(d.OnFire, []string{"increment_counter"}) ||
		d.Counters.Get("acme.ops/COUNT_SHELL").Fire != 1 || len(d.Failures) != 1 || d.Failures[0].Clause != "OAR-FIRE-9" ||
		!strings.Contains(d.Failures[0].Error, "disk full") || !strings.Contains(d.Failures[0].Error, "another replica changed the session since") {
		t.Errorf("answer %+v", d.Decision)
	}
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rc.Close()
	if got, err := rc.HGet(t.Context(), prefix+"s1", "cacme.ops/COUNT_SHELL").Result(); err != nil || got != "1 0" {
		t.Errorf("Redis holds COUNT_SHELL %q (%v); the increment stayed committed, so \"1 0\"", got, err)
	}
}

// interfereAfterCommit changes the session through another store after the first
// commit the replica makes.
type interfereAfterCommit struct {
	interferer
	done bool
}

func (i *interfereAfterCommit) RoundTrip(op string, took time.Duration, err error) {
	i.Observer.RoundTrip(op, took, err)
	if op == "commit" && err == nil && !i.done {
		i.done = true
		i.interfere()
	}
}

// decisionJSON is a decision as its answer has it.
func decisionJSON(t *testing.T, a Answer) string {
	t.Helper()
	b, err := json.Marshal(a.Decision)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReloadKeepsSharedCounters: a new bundle serving the same rule continues from its
// counters, as with the memory store.
func TestReloadKeepsSharedCounters(t *testing.T) {
	r := serve(t, sealed(t, testCapability, testRules), Options{SharedSessions: sharedStore(t, redistest.Shared(t).URL, redisstore.Options{})})
	for range 2 {
		r.evaluate(t, shellCall("s1"))
	}
	if _, err := r.Source().Install(sealed(t, testCapability, outageRules)); err != nil {
		t.Fatal(err)
	}
	if d := r.evaluate(t, shellCall("s1")); d.Decision.Decision != "block" || d.Counters.Get("acme.ops/COUNT_SHELL").Fire != 3 {
		t.Errorf("the third call after a reload: %+v", d.Decision)
	}
}

// noFlowRules need no session state at tool.pre_invoke; flowRulesAfterReload add a flow
// rule reading the window.
const (
	noFlowRules = `
oar: "1.0"
namespace: acme.ops
id: NUDGE_WRITE
kind: policy
anchor: tool.pre_invoke
selector: {tool: [write]}
requires: {profiles: [tool]}
effect: nudge
`
	flowRulesAfterReload = noFlowRules + `
---
oar: "1.0"
namespace: acme.security
id: DEPLOY_AFTER_FETCH
kind: policy
anchor: tool.pre_invoke
selector: {tool: [deploy]}
requires: {profiles: [tool]}
flow: [web_fetch]
effect: nudge
`
)

// TestWindowKeptAcrossReloadLikeMemory: a host advertising an activity window gets a
// step for every admitted tool call ([OAR-PROF-9]) even while the bundle has no flow
// rule, so a bundle installed next that adds one decides a deploy after a fetch alike
// with the memory store and with Redis.
func TestWindowKeptAcrossReloadLikeMemory(t *testing.T) {
	mem := serve(t, sealed(t, testCapability, noFlowRules), Options{})
	red := serve(t, sealed(t, testCapability, noFlowRules), Options{SharedSessions: sharedStore(t, redistest.Shared(t).URL, redisstore.Options{})})
	fetch := occ("tool.pre_invoke", "s1", `"tool_call": {"name": "web_fetch", "arguments": {}}`)
	deploy := occ("tool.pre_invoke", "s1", `"tool_call": {"name": "deploy", "arguments": {}}`)
	for name, r := range map[string]*testSidecar{"memory": mem, "redis": red} {
		r.evaluate(t, fetch)
		if _, err := r.Source().Install(sealed(t, testCapability, flowRulesAfterReload)); err != nil {
			t.Fatal(err)
		}
		if d := r.evaluate(t, deploy); d.Decision.Decision != "nudge" || d.Rule != "acme.security/DEPLOY_AFTER_FETCH" {
			t.Errorf("%s: a deploy after a fetch taken under the previous bundle: %+v", name, d.Decision)
		}
	}
}

// TestLoneSurrogateStepLikeMemory: a tool name holding a lone surrogate ([OAR-FACT-23])
// is the step a flow rule names after the Redis window stores it, as in memory.
func TestLoneSurrogateStepLikeMemory(t *testing.T) {
	rules := `{"oar": "1.0", "namespace": "acme.security", "id": "DEPLOY_AFTER_ODD", "kind": "policy", "anchor": "tool.pre_invoke",
"selector": {"tool": ["deploy"]}, "requires": {"profiles": ["tool"]}, "flow": ["odd\ud800"], "effect": "nudge"}`
	b := sealed(t, testCapability, rules)
	odd := occ("tool.pre_invoke", "s1", `"tool_call": {"name": "odd\ud800", "arguments": {}}`)
	deploy := occ("tool.pre_invoke", "s1", `"tool_call": {"name": "deploy", "arguments": {}}`)
	for name, opt := range map[string]Options{"memory": {}, "redis": {SharedSessions: sharedStore(t, redistest.Shared(t).URL, redisstore.Options{CacheSessions: -1})}} {
		r := serve(t, b, opt)
		r.evaluate(t, odd)
		if d := r.evaluate(t, deploy); d.Decision.Decision != "nudge" {
			t.Errorf("%s: a deploy after odd\\ud800: %+v", name, d.Decision)
		}
	}
}
