package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/redis/go-redis/v9"

	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
)

// TestCauseOf: each failure a call can meet is classified by what it found of the
// store, through the wrapping a call adds and the version check's own error.
func TestCauseOf(t *testing.T) {
	readTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	for _, tc := range []struct {
		err  error
		want Cause
	}{
		{&ServerTooOldError{Version: "4.0.14"}, CauseUnusable},
		{&UnreadableVersionError{Version: "x"}, CauseUnusable},
		{fmt.Errorf("session %q: %w: counter %q: %w", "s", ErrUnreadableSession, "cX", errors.New("bad")), CauseUnreadableState},
		{redisReply("OOM command not allowed when used memory > 'maxmemory'."), CauseRefusing},
		{&serverCheckError{err: redisReply("LOADING Redis is loading the dataset in memory")}, CauseRefusing},
		{readTimeout, CauseTimeout},
		{&serverCheckError{err: readTimeout}, CauseTimeout},
		{context.DeadlineExceeded, CauseTimeout},
		{fmt.Errorf("reading session: %w", redis.ErrPoolTimeout), CauseTimeout},
		{dialTimeout, CauseUnreachable},
		{refused, CauseUnreachable},
		{io.EOF, CauseUnreachable},
		{&serverCheckError{err: io.EOF}, CauseUnreachable},
	} {
		if got := CauseOf(fmt.Errorf("load of session %q: %w", "s", tc.err)); got != tc.want {
			t.Errorf("%v: cause %s, want %s", tc.err, got, tc.want)
		}
	}
}

// TestCauseOfCallsToARealServer: the causes of calls that fail on the wire — a server
// that takes the connection and never answers, and one that is not listening.
func TestCauseOfCallsToARealServer(t *testing.T) {
	silent := redistest.Silent(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	for addr, want := range map[string]Cause{silent: CauseTimeout, closed: CauseUnreachable} {
		s, err := New(Options{URL: "redis://" + addr, Prefix: redistest.Prefix(t), Timeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Load(context.Background(), "s1")
		_ = s.Close()
		if got := CauseOf(err); err == nil || got != want {
			t.Errorf("a load from %s: %v, cause %s; want cause %s", addr, err, got, want)
		}
	}
}

// TestVersionUnchecked: a store behind a proxy answering INFO with an error reply says
// its server's version is unchecked, quoting the reply, and logs it once, not at every
// connection; a store whose connections read the version says nothing of it.
func TestVersionUnchecked(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	old := storeLog.Swap(&log)
	t.Cleanup(func() { storeLog.Store(old) })

	const reply = "ERR unsupported command"
	srv := redistest.Shared(t)
	s, accepted := infoAnsweredStore(t, srv, reply)
	if got := s.VersionUnchecked(); got != "" {
		t.Errorf("before any connection: VersionUnchecked %q, want none", got)
	}
	ctx := context.Background()
	for range 3 {
		if _, err := s.Load(ctx, "s1"); err != nil {
			t.Fatal(err)
		}
		// The next load dials a connection of its own.
		used := s.client
		s.client = redis.NewClient(used.Options())
		_ = used.Close()
	}
	if n := accepted.Load(); n < 3 {
		t.Fatalf("the proxy accepted %d connections; want one a load", n)
	}
	if got := s.VersionUnchecked(); got != reply {
		t.Errorf("VersionUnchecked %q, want %q", got, reply)
	}
	mu.Lock()
	logged := slices.Clone(lines)
	mu.Unlock()
	if len(logged) != 1 || !strings.Contains(logged[0], "does not tell its version") || !strings.Contains(logged[0], reply) {
		t.Errorf("logged %q; want one line quoting the reply", logged)
	}

	checked := newStore(t, Options{})
	if _, err := checked.Load(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if got := checked.VersionUnchecked(); got != "" {
		t.Errorf("a store that read its server's version: VersionUnchecked %q, want none", got)
	}
}
