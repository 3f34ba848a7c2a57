package sidecar

import (
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
)

// replyDropper forwards TCP connections to a Redis server and swallows the next drop
// chunks the server sends back, so a call runs in Redis while its answer is lost.
type replyDropper struct {
	addr string
	drop atomic.Int64
}

func newReplyDropper(t *testing.T, target string) *replyDropper {
	t.Helper()
	p := &replyDropper{}
	p.addr = redistest.Proxy(t, target, func(client, server net.Conn) {
		go func() { _, _ = io.Copy(server, client); _ = server.Close() }()
		go p.answer(client, server)
	})
	return p
}

// answer copies the server's replies to the client, less the ones to drop.
func (p *replyDropper) answer(client, server net.Conn) {
	defer client.Close()
	buf := make([]byte, 4096)
	for {
		n, err := server.Read(buf)
		if n > 0 && p.drop.Add(-1) < 0 {
			p.drop.Store(0)
			if _, err := client.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// lostReplyRun is a sidecar serving b (testRules) with opt, whose store reaches Redis
// through a replyDropper, after one shell call of session s1 (committed, counted 1).
func lostReplyRun(t *testing.T, b *bundle.Bundle, opt Options) (*testSidecar, *replyDropper, func() string) {
	t.Helper()
	srv := redistest.Shared(t)
	p := newReplyDropper(t, srv.Addr)
	prefix := redistest.Prefix(t)
	opt.SharedSessions = sharedStore(t, "redis://"+p.addr, redisstore.Options{Prefix: prefix, Timeout: time.Second})
	r := serve(t, b, opt)
	if d := r.evaluate(t, shellCall("s1")); d.Counters.Get("acme.ops/COUNT_SHELL").Fire != 1 {
		t.Fatalf("first call %+v", d.Decision)
	}
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rc.Close() })
	held := func() string {
		v, err := rc.HGet(context.Background(), prefix+"s1", "cacme.ops/COUNT_SHELL").Result()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	return r, p, held
}

// TestLostCommitReplyIsRecognisedWhenSentAgain: a commit that ran in Redis but whose
// answer was lost is sent again and recognised as applied, so the answer reports the
// counter Redis holds and the event is published ([OAR-FIRE-9]).
func TestLostCommitReplyIsRecognisedWhenSentAgain(t *testing.T) {
	r, p, held := lostReplyRun(t, sealed(t, testCapability, testRules), Options{})
	p.drop.Store(1)
	d := r.evaluate(t, shellCall("s1"))
	if d.Decision.Decision != "warn" || d.Counters.Get("acme.ops/COUNT_SHELL").Fire != 2 || len(d.Failures) != 0 || len(d.Events) != 1 {
		t.Errorf("the second call, whose first commit answer was lost: %+v", d.Decision)
	}
	if got := held(); got != "2 0" {
		t.Errorf("Redis holds COUNT_SHELL %q, want \"2 0\"", got)
	}
	if n := strings.Count(r.events.String(), "\n"); n != 2 {
		t.Errorf("%d event lines written, want 2", n)
	}
}

// TestCommitOutcomeUnknownIsReported: when neither the commit nor the commit sent again
// is answered, whether the changes were applied is unknown (here they were); the answer
// claims no counter and no event, and its failure says the changes may have been
// applied rather than that they were not ([OAR-FIRE-9], [OAR-OPS-3]).
func TestCommitOutcomeUnknownIsReported(t *testing.T) {
	r, p, held := lostReplyRun(t, sealed(t, testCapability, testRules), Options{})
	p.drop.Store(1 << 40)
	d := r.evaluate(t, shellCall("s1"))
	p.drop.Store(0)
	if d.Decision.Decision != "block" || d.Rule != "acme.ops/COUNT_SHELL" || len(d.Counters) != 0 || len(d.Events) != 0 || len(d.Failures) != 1 ||
		!strings.Contains(d.Failures[0].Error, "may or may not have been applied") {
		t.Errorf("the second call, with no commit answered: %+v", d.Decision)
	}
	if got := held(); got != "2 0" {
		t.Errorf("Redis holds COUNT_SHELL %q, want \"2 0\" (the commit ran)", got)
	}
}
