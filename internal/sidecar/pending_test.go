package sidecar

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
)

// sawShell warns an output of a session that made a shell call: it reads
// COUNT_SHELL's counter and changes nothing.
const sawShell = `
---
oar: "1.0"
namespace: acme.ops
id: SAW_SHELL
kind: policy
anchor: model.output
when: fire_count_of("acme.ops/COUNT_SHELL") >= 1
effect: warn
`

// storeCalls is an Observer that records a store's metrics and sends the operation of
// each of its round trips on trips, while it has room.
type storeCalls struct {
	redisstore.Observer
	trips chan string
}

func (o *storeCalls) RoundTrip(op string, took time.Duration, err error) {
	o.Observer.RoundTrip(op, took, err)
	select {
	case o.trips <- op:
	default: // nobody is counting any more
	}
}

// afterFirstCommit records a store's metrics and calls do once, after the store's first
// successful commit, before the commit returns.
type afterFirstCommit struct {
	redisstore.Observer
	do   func()
	done bool
}

func (o *afterFirstCommit) RoundTrip(op string, took time.Duration, err error) {
	o.Observer.RoundTrip(op, took, err)
	if op == "commit" && err == nil && !o.done {
		o.done = true
		o.do()
	}
}

func (o *afterFirstCommit) Conflict()          { o.Observer.Conflict() }
func (o *afterFirstCommit) PendingWait()       { o.Observer.PendingWait() }
func (o *afterFirstCommit) CorrectionTooLate() { o.Observer.CorrectionTooLate() }

// TestReadDuringACorrectionSeesTheCorrectedSession: replica A commits a shell call's
// increment and then finds its event refused, so it takes the increment back
// ([OAR-FIRE-9], [OAR-OPS-4]). Replica B reads the session between A's commit and its
// correction, for an output whose rule only reads the counter. B must not decide on
// the increment that is taken back — no serial order of the two calls shows it — so
// its read waits until A's correction lands and sees the session without it, and B's
// metrics count the wait.
func TestReadDuringACorrectionSeesTheCorrectedSession(t *testing.T) {
	url, prefix := redistest.Shared(t).URL, redistest.Prefix(t)
	b := sealed(t, testCapability, testRules+sawShell)
	// Long enough that A's correction lands in time on a busy machine.
	opt := redisstore.Options{Prefix: prefix, PendingTTL: 10 * time.Second, Timeout: 20 * time.Second}
	storeA, storeB := sharedStore(t, url, opt), sharedStore(t, url, opt)
	a := serve(t, b, Options{Events: failingWriter{}, SharedSessions: storeA})
	other := serve(t, b, Options{SharedSessions: storeB})
	tripsB := make(chan string, 64)
	storeB.SetObserver(&storeCalls{Observer: other.Metrics(), trips: tripsB})
	answerB := httptest.NewRecorder()
	doneB := make(chan struct{})
	// Between A's commit and its correction: B's call, until it is answered or has made
	// two round trips (a load, and a load again while A's commit is pending).
	hook := &afterFirstCommit{Observer: a.Metrics()}
	hook.do = func() {
		go func() {
			defer close(doneB)
			other.Handler().ServeHTTP(answerB, httptest.NewRequest(http.MethodPost, "/v1/evaluate", strings.NewReader(occ("content.output", "s1", ""))))
		}()
		for n := 0; n < 2; {
			select {
			case <-doneB:
				return
			case <-tripsB:
				n++
			}
		}
	}
	storeA.SetObserver(hook)
	d := a.evaluate(t, shellCall("s1"))
	if !hook.done {
		t.Fatalf("A's call committed nothing: %+v", d.Decision)
	}
	<-doneB
	if d.Decision.Decision != "block" || d.Rule != "acme.ops/COUNT_SHELL" || len(d.Counters) != 0 || len(d.Failures) != 1 || strings.Contains(d.Failures[0].Error, "could not be taken back") {
		t.Errorf("A's call, its event refused: %+v; want COUNT_SHELL errored and its increment taken back", d.Decision)
	}
	if answerB.Code != http.StatusOK || !strings.Contains(answerB.Body.String(), `"decision":"none"`) {
		t.Errorf("B's output read during A's correction: %d %s; want none, on the session without the increment taken back", answerB.Code, answerB.Body)
	}
	if n := other.metric(t, "oar_engine_session_store_pending_waits_total", nil); n != 1 {
		t.Errorf("B counted %v reads waiting for a pending marker; want 1", n)
	}
	if n := a.metric(t, "oar_engine_session_store_corrections_too_late_total", nil); n != 0 {
		t.Errorf("A counted %v corrections too late; want 0", n)
	}
}

// TestCorrectionTooLateKeepsTheCommit: when the stream's refusal comes after the
// commit's pending time passed, other replicas may have read the committed increment,
// so it is not taken back: the committed decision stands, the refused event dropped
// from its events and on_fire, and its failure says why ([OAR-FIRE-9]); the sidecar's
// metrics count the correction too late, so an operator sees a pending time too short.
func TestCorrectionTooLateKeepsTheCommit(t *testing.T) {
	const ttl = time.Millisecond
	srv, prefix := redistest.Shared(t), redistest.Prefix(t)
	store := sharedStore(t, srv.URL, redisstore.Options{Prefix: prefix, PendingTTL: ttl})
	r := serve(t, sealed(t, testCapability, testRules), Options{Events: failingWriter{}, SharedSessions: store})
	store.SetObserver(&afterFirstCommit{Observer: r.Metrics(), do: func() { time.Sleep(20 * ttl) }})
	d := r.evaluate(t, shellCall("s1"))
	if d.Decision.Decision != "warn" || len(d.Events) != 0 || d.Counters.Get("acme.ops/COUNT_SHELL").Fire != 1 || len(d.Failures) != 1 ||
		!strings.Contains(d.Failures[0].Error, "could not be taken back") || !strings.Contains(d.Failures[0].Error, "pending time") {
		t.Errorf("answer %+v; want the committed decision, its event dropped, and a failure saying the correction came too late", d.Decision)
	}
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rc.Close()
	if got, err := rc.HGet(t.Context(), prefix+"s1", "cacme.ops/COUNT_SHELL").Result(); err != nil || got != "1 0" {
		t.Errorf("Redis holds COUNT_SHELL %q (%v); the increment stands, so \"1 0\"", got, err)
	}
	if n := r.metric(t, "oar_engine_session_store_corrections_too_late_total", nil); n != 1 {
		t.Errorf("counted %v corrections too late; want 1", n)
	}
}

// announceOverCount announces every output (an event, nothing else) and overrides
// COUNT_OUT, which counts outputs; when the announcement cannot be evaluated, it fails
// open and so suppresses nothing ([OAR-OPS-4]).
const announceOverCount = `
---
oar: "1.0"
namespace: acme.ops
id: ANNOUNCE
kind: policy
anchor: model.output
on_fire: [publish_event]
on_error: fail_open
effect: warn
overrides: [acme.ops/COUNT_OUT]
---
oar: "1.0"
namespace: acme.ops
id: COUNT_OUT
kind: policy
anchor: model.output
on_fire: [increment_counter]
effect: warn
`

// TestCorrectionOfACommitThatChangedNothing: an evaluation that only publishes an
// event changes nothing in the session, so its commit writes nothing and holds no
// pending marker. When the stream refuses the event, the rule that published it
// suppresses nothing, and the corrected evaluation increments a counter: it is
// committed as any commit of changes is, and the answer is the one memory mode gives
// ([OAR-FIRE-9], [OAR-OPS-4]).
func TestCorrectionOfACommitThatChangedNothing(t *testing.T) {
	b := sealed(t, testCapability, announceOverCount)
	store := sharedStore(t, redistest.Shared(t).URL, redisstore.Options{PendingTTL: 10 * time.Second, Timeout: 20 * time.Second})
	modes := map[string]*testSidecar{
		"memory": serve(t, b, Options{Events: failingWriter{}}),
		"redis":  serve(t, b, Options{Events: failingWriter{}, SharedSessions: store}),
	}
	for mode, r := range modes {
		d := r.evaluate(t, occ("content.output", "s1", ""))
		if d.Rule != "acme.ops/COUNT_OUT" || d.Counters.Get("acme.ops/COUNT_OUT").Fire != 1 || len(d.Failures) != 1 || strings.Contains(d.Failures[0].Error, "taken back") {
			t.Errorf("%s mode: %+v; want COUNT_OUT fired once, ANNOUNCE failed open", mode, d.Decision)
		}
	}
}
