package redisstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

// TestCheckVersion: a server whose INFO server reports a major version below 5 is
// refused, naming the version found and the one needed; 5.0 and later pass. A version
// whose major version is not decimal digits that an int holds is refused too, naming
// it (one too large for an int once passed as the largest); a server whose INFO has no
// redis_version passes (nothing says it is too old).
func TestCheckVersion(t *testing.T) {
	const (
		passes = iota
		tooOld
		unreadable
	)
	for _, tc := range []struct {
		version string
		want    int
	}{
		{"4.0.14", tooOld},
		{"3.2.12", tooOld},
		{"2.8.24", tooOld},
		{"4.9.999", tooOld},
		{"04.0.0", tooOld},
		{"5.0.0", passes},
		{"5.0.14", passes},
		{"6.2.6", passes},
		{"7.2.4", passes},
		{"255.255.255", passes},
		{"10.0.0", passes},
		{"5", passes},
		{"7.2.4-rc1", passes},
		{"99999999999999999999.0.0", unreadable},
		{"9223372036854775808", unreadable},
		{"-4.0.0", unreadable},
		{"+4.0.0", unreadable},
		{"+5.0.0", unreadable},
		{"garbage", unreadable},
		{"", unreadable},
		{".4", unreadable},
		{"4x.0", unreadable},
		{"5x.0", unreadable},
		{" 7.2.4", passes},
	} {
		t.Run(tc.version, func(t *testing.T) {
			info := "# Server\r\nredis_git_sha1:00000000\r\nredis_version:" + tc.version + "\r\nredis_mode:standalone\r\n"
			err := checkVersion(info, minServerMajor)
			var old *ServerTooOldError
			var bad *UnreadableVersionError
			switch {
			case tc.want == passes && err != nil,
				tc.want == tooOld && !errors.As(err, &old),
				tc.want == unreadable && !errors.As(err, &bad),
				err != nil && !errors.Is(err, ErrServerUnusable):
				t.Fatalf("version %q: %v; want %v", tc.version, err, []string{"it passed", "refused as too old", "refused as unreadable"}[tc.want])
			}
			version := strings.TrimSpace(tc.version)
			if old != nil && (old.Version != version || !strings.Contains(err.Error(), "Redis "+version+"; the session store needs Redis 5.0 or later")) {
				t.Errorf("version %q: the error %q does not name the version found and the one needed", tc.version, err)
			}
			if bad != nil && (bad.Version != version || !strings.Contains(err.Error(), fmt.Sprintf("redis_version %q, which does not read as a version; the session store needs Redis 5.0 or later", version))) {
				t.Errorf("version %q: the error %q does not name the version found and the one needed", tc.version, err)
			}
		})
	}
	if err := checkVersion("# Server\r\nredis_mode:standalone\r\n", minServerMajor); err != nil {
		t.Errorf("INFO without redis_version: %v; want it let through", err)
	}
}

// TestServerVersionChecked: the real server (Redis 7) passes the check every new
// connection makes; held to a minimum above its version, every call fails, naming the
// version it found.
func TestServerVersionChecked(t *testing.T) {
	s := newStore(t, Options{})
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("the test's Redis: %v", err)
	}
	info, err := s.client.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	// newStore opens no connection: the first call dials, after minMajor is raised, so
	// every connection strict uses is checked against it.
	strict := newStore(t, Options{})
	strict.minMajor = 256
	for name, call := range map[string]func() error{
		"ping": func() error { return strict.Ping(context.Background()) },
		"load": func() error { _, err := strict.Load(context.Background(), "s1"); return err },
	} {
		err := call()
		var old *ServerTooOldError
		if !errors.As(err, &old) || !strings.Contains(info, "redis_version:"+old.Version+"\r\n") {
			t.Errorf("%s on a server below the minimum: %v; want a ServerTooOldError naming its version", name, err)
		}
	}
}

// TestCommitToTooOldServer: a commit to a server too old for the store is not sent, and
// says so; it is never one whose outcome is unknown.
func TestCommitToTooOldServer(t *testing.T) {
	snap := load(t, newStore(t, Options{}), "s1")
	if _, err := snap.Apply(plain, engine.ActionIncrementCounter); err != nil {
		t.Fatal(err)
	}
	strict := newStore(t, Options{})
	strict.minMajor = 256
	ok, err := strict.Commit(context.Background(), snap)
	var old *ServerTooOldError
	if ok || !errors.As(err, &old) || errors.Is(err, ErrOutcomeUnknown) {
		t.Errorf("a commit to a server too old: %v, %v; want a ServerTooOldError, not an unknown outcome", ok, err)
	}
}

// connectionsReceived is how many connections the server has accepted.
func connectionsReceived(t *testing.T, admin *Store) int {
	t.Helper()
	info, err := admin.client.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("INFO stats has no total_connections_received:\n%s", info)
	return 0
}

// TestTooOldServerIsRemembered: once a new connection found the server too old, the
// store's calls fail at once with the same error, dialing nothing, and its observer
// counts them as failures without a round trip; a server upgraded meanwhile is used
// once the refusal is due to be checked again, by the first call past it. Ping, which
// /readyz calls, dials all the same, so it says what the server is now, and one that
// finds it upgraded ends the refusal at once.
func TestTooOldServerIsRemembered(t *testing.T) {
	admin := newStore(t, Options{})
	seen := &roundTrips{ops: map[string]int{}}
	strict := newStore(t, Options{Observer: seen})
	strict.minMajor = 256
	ctx := context.Background()
	snap := load(t, admin, "s1")
	_, _ = snap.Apply(plain, engine.ActionIncrementCounter)
	_, first := strict.Load(ctx, "s1")
	if !errors.Is(first, ErrServerUnusable) {
		t.Fatalf("a load from a server too old: %v", first)
	}
	before := connectionsReceived(t, admin)
	for i := range 10 {
		if _, err := strict.Load(ctx, "s1"); err == nil || err.Error() != first.Error() {
			t.Fatalf("load %d after the refusal: %v; want %v", i, err, first)
		}
		if ok, err := strict.Commit(ctx, snap); ok || !errors.Is(err, ErrServerUnusable) || errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("commit %d after the refusal: %v %v; want the server's refusal, nothing sent", i, ok, err)
		}
	}
	if n := connectionsReceived(t, admin) - before; n != 0 {
		t.Errorf("20 calls to a server found too old opened %d connections; want none", n)
	}
	if seen.failed != 1 || seen.fast != 20 || len(seen.ops) != 0 {
		t.Errorf("the observer saw %d failed round trips, %d calls failed at once, and %v; want 1, 20 and none", seen.failed, seen.fast, seen.ops)
	}

	strict.minMajor = minServerMajor // the server is upgraded
	before = connectionsReceived(t, admin)
	if _, err := strict.Load(ctx, "s1"); err == nil || err.Error() != first.Error() {
		t.Fatalf("a load before the refusal is checked again: %v; want %v", err, first)
	}
	if n := connectionsReceived(t, admin) - before; n != 0 {
		t.Errorf("a load before the refusal is checked again opened %d connections", n)
	}
	r := strict.refused.Load()
	strict.refused.Store(&refusal{err: r.err, recheck: time.Now()}) // the second has passed
	recheck, err := strict.refusedServer()
	if _, again := strict.refusedServer(); recheck == nil || err != nil || again == nil {
		t.Error("once the refusal is due, not the first call alone checks it again while the others fail")
	}
	strict.refused.Store(&refusal{err: r.err, recheck: time.Now()})
	if _, err := strict.Load(ctx, "s1"); err != nil {
		t.Fatalf("the first load due to check the refusal again, on a server upgraded: %v", err)
	}
	if strict.refused.Load() != nil {
		t.Error("a connection to the upgraded server left the refusal")
	}

	strict = newStore(t, Options{})
	strict.minMajor = 256
	if _, err := strict.Load(ctx, "s1"); !errors.Is(err, ErrServerUnusable) {
		t.Fatalf("a load from a server too old: %v", err)
	}
	if err := strict.Ping(ctx); !errors.Is(err, ErrServerUnusable) {
		t.Errorf("a ping of a server too old: %v", err)
	}
	strict.minMajor = minServerMajor
	if err := strict.Ping(ctx); err != nil {
		t.Errorf("a ping of the server upgraded: %v", err)
	}
	if _, err := strict.Load(ctx, "s1"); err != nil {
		t.Errorf("a load after a ping found the server upgraded: %v", err)
	}
}

// redisReply is an error reply of the server, as go-redis reports one.
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}

// TestRefusedInfo: an error reply to INFO that refuses the command (an ACL, a renamed
// command, a proxy's refusal, whatever its wording) withholds the version, and lets a
// connection through; one of a server not serving the connection for now (still
// loading its data, busy with a script, cut off from its primary or its cluster, full,
// or waiting for a password) or a failure to reach it does not, and that failure is
// one that sent nothing. Either reply is the server's answer, not a network fault.
func TestRefusedInfo(t *testing.T) {
	for _, tc := range []struct {
		err      error
		withheld bool
	}{
		{redisReply("NOPERM User u has no permissions to run the 'info' command"), true},
		{redisReply("ERR unknown command 'INFO', with args beginning with: 'server'"), true},
		{redisReply("ERR unsupported command"), true},
		{redisReply("ERR command not allowed"), true},
		{redisReply("unsupported command 'info'"), true},
		{redisReply("BUSYKEY Target key name already exists."), true},
		{redisReply("LOADING Redis is loading the dataset in memory"), false},
		{redisReply("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT."), false},
		{redisReply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), false},
		{redisReply("CLUSTERDOWN The cluster is down"), false},
		{redisReply("TRYAGAIN Multiple keys request during rehashing of slot"), false},
		{redisReply("NOAUTH Authentication required."), false},
		{redisReply("ERR max number of clients reached"), false},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, false},
		{nil, false},
	} {
		if got := versionWithheld(tc.err); got != tc.withheld {
			t.Errorf("%v: version withheld %v, want %v", tc.err, got, tc.withheld)
		}
		if tc.err != nil && !tc.withheld && !unsent(&serverCheckError{err: tc.err}) {
			t.Errorf("a connection whose INFO failed with %v counts as one a call may have been sent on", tc.err)
		}
		var answered redisReply
		reply := errors.As(tc.err, &answered)
		if got := AnsweredWithError(fmt.Errorf("reading session: %w", &serverCheckError{err: tc.err})); tc.err != nil && got != reply {
			t.Errorf("a connection whose INFO failed with %v: answered with an error %v, want %v", tc.err, got, reply)
		}
	}
}

// TestInfoRefusedByACL: a user whose ACL refuses INFO (NOPERM) is let through the
// version check, however high the minimum: nothing says its server is too old.
func TestInfoRefusedByACL(t *testing.T) {
	admin := newStore(t, Options{})
	ctx := context.Background()
	user := "noinfo-" + newVersion()
	if err := admin.client.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-info").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.client.Do(ctx, "ACL", "DELUSER", user).Err() })
	u, err := url.Parse(redistest.Shared(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(user)
	s, err := New(Options{URL: u.String(), PasswordFile: writeSecret(t, "pw\n"), Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.minMajor = 256
	if err := s.client.Info(ctx, "server").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("INFO as a user without it: %v; want NOPERM", err)
	}
	if _, err := s.Load(ctx, "s1"); err != nil {
		t.Errorf("a load as a user refused INFO: %v", err)
	}
}

// TestRefusedServerDialedOnce: a call to a server found too old opens one connection,
// whatever the call: a load's pipeline does not dial again after its connection is
// refused (go-redis's pipeline pool would hand it to the main pool, which dials anew).
func TestRefusedServerDialedOnce(t *testing.T) {
	admin := newStore(t, Options{})
	ctx := context.Background()
	snap := load(t, admin, "s1")
	_, _ = snap.Apply(plain, engine.ActionIncrementCounter)
	for name, call := range map[string]func(*Store) error{
		"load":   func(s *Store) error { _, err := s.Load(ctx, "s1"); return err },
		"commit": func(s *Store) error { _, err := s.Commit(ctx, snap); return err },
		"ping":   func(s *Store) error { return s.Ping(ctx) },
	} {
		strict := newStore(t, Options{})
		strict.minMajor = 256
		before := connectionsReceived(t, admin)
		if err := call(strict); !errors.Is(err, ErrServerUnusable) {
			t.Fatalf("a %s from a server too old: %v", name, err)
		}
		if n := connectionsReceived(t, admin) - before; n != 1 {
			t.Errorf("a %s from a server too old opened %d connections; want 1", name, n)
		}
	}
}

// rewritingProxy forwards TCP connections to the real Redis at target line by line,
// each line the client sends through toServer and each the server answers through
// toClient (nil: as it is), and returns its URL: the real server, answering
// differently in one way. A rewrite keeps a line's length, so the protocol's lengths
// stay true.
func rewritingProxy(t *testing.T, target string, toServer, toClient func(line []byte) []byte) string {
	t.Helper()
	return "redis://" + redistest.Proxy(t, target, func(client, server net.Conn) {
		go forwardLines(server, client, toServer)
		go forwardLines(client, server, toClient)
	})
}

// forwardLines copies src to dst a line at a time through rewrite, and closes both
// when either ends.
func forwardLines(dst, src net.Conn, rewrite func([]byte) []byte) {
	defer dst.Close()
	defer src.Close()
	r := bufio.NewReader(src)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && rewrite != nil {
			line = rewrite(line)
		}
		if len(line) > 0 {
			if _, err := dst.Write(line); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestServerWithoutVersionIsUsed: a real server whose INFO server has no
// redis_version line, or that does not know INFO (its command renamed on the way, as a
// hardened server or a proxy may), is used, its version unread, even by a store that
// would refuse every real version: nothing shows it is too old, and the commit script
// itself fails on a server older than 5.
func TestServerWithoutVersionIsUsed(t *testing.T) {
	srv := redistest.Shared(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name               string
		toServer, toClient func([]byte) []byte
	}{
		{name: "no redis_version", toClient: func(line []byte) []byte {
			if v, ok := bytes.CutPrefix(line, []byte("redis_version:")); ok {
				return append([]byte("redis_vxrsion:"), v...)
			}
			return line
		}},
		{name: "no INFO", toServer: func(line []byte) []byte {
			if bytes.EqualFold(line, []byte("info\r\n")) {
				return []byte("infx\r\n")
			}
			return line
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Options{URL: rewritingProxy(t, srv.Addr, tc.toServer, tc.toClient), Prefix: redistest.Prefix(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.minMajor = 256
			snap, err := s.Load(ctx, "s1")
			if err != nil {
				t.Fatalf("a load: %v; want the server used", err)
			}
			if _, err := snap.Apply(plain, engine.ActionIncrementCounter); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.Commit(ctx, snap); !ok || err != nil {
				t.Fatalf("a commit: %v %v; want it applied", ok, err)
			}
			if err := s.Ping(ctx); err != nil {
				t.Errorf("a ping: %v", err)
			}
		})
	}
}

// TestInfoRefusedByProxy: a proxy in front of the real server that answers INFO
// itself with an error reply refusing it, whatever its wording, lets every connection
// through, its version unread, even for a store that would refuse every real version:
// loads, commits and pings work on the one connection dialed, and no refusal is
// remembered. A refusal remembered from before ends with the first connection let
// through.
func TestInfoRefusedByProxy(t *testing.T) {
	srv := redistest.Shared(t)
	ctx := context.Background()
	for _, reply := range []string{"ERR unsupported command", "ERR command not allowed", "unsupported command 'info'", "ERR unknown command 'info'"} {
		t.Run(reply, func(t *testing.T) {
			s, accepted := infoAnsweredStore(t, srv, reply)
			s.minMajor = 256
			s.refused.Store(&refusal{err: &ServerTooOldError{Version: "4.0.14"}, recheck: time.Now()})
			for i := range 3 {
				snap, err := s.Load(ctx, "s1")
				if err != nil {
					t.Fatalf("load %d: %v; want the server used", i, err)
				}
				c, err := snap.Apply(plain, engine.ActionIncrementCounter)
				if err != nil || c.Fire != int64(i+1) {
					t.Fatalf("load %d read the count %d (%v); want %d", i, c.Fire-1, err, i)
				}
				if ok, err := s.Commit(ctx, snap); !ok || err != nil {
					t.Fatalf("commit %d: %v %v; want it applied", i, ok, err)
				}
			}
			if err := s.Ping(ctx); err != nil {
				t.Errorf("a ping: %v", err)
			}
			if n := accepted.Load(); n != 1 {
				t.Errorf("3 loads, 3 commits and a ping dialed %d connections; want 1", n)
			}
			if s.refused.Load() != nil {
				t.Error("a connection let through left the refusal remembered before it")
			}
		})
	}
}

// infoAnsweredStore is a store of the server srv behind a proxy answering INFO with
// reply (redistest.InfoAnswered), closed when t ends, and the count of connections
// the proxy accepted.
func infoAnsweredStore(t *testing.T, srv *redistest.Server, reply string) (*Store, *atomic.Int64) {
	t.Helper()
	addr, accepted := redistest.InfoAnswered(t, srv.Addr, reply)
	s, err := New(Options{URL: "redis://" + addr, Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, accepted
}

// TestInfoAnsweredNotServing: a proxy in front of the real server that answers INFO
// with the reply of a server not serving for now (LOADING, BUSY, MASTERDOWN, NOAUTH)
// fails each connection: every call fails, names that reply, sent nothing and is the
// server's answer, not a network fault, with no refusal of the version remembered: the
// next call dials again.
func TestInfoAnsweredNotServing(t *testing.T) {
	srv := redistest.Shared(t)
	ctx := context.Background()
	for _, reply := range []string{
		"LOADING Redis is loading the dataset in memory",
		"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.",
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
		"NOAUTH Authentication required.",
	} {
		t.Run(reply, func(t *testing.T) {
			s, accepted := infoAnsweredStore(t, srv, reply)
			snap := load(t, newStore(t, Options{}), "s1")
			if _, err := snap.Apply(plain, engine.ActionIncrementCounter); err != nil {
				t.Fatal(err)
			}
			calls := map[string]func() error{
				"load":   func() error { _, err := s.Load(ctx, "s1"); return err },
				"commit": func() error { _, err := s.Commit(ctx, snap); return err },
				"ping":   func() error { return s.Ping(ctx) },
			}
			for _, name := range []string{"load", "commit", "ping", "load"} {
				err := calls[name]()
				if err == nil || !strings.Contains(err.Error(), "reading the server's version (INFO server): "+reply) ||
					errors.Is(err, ErrServerUnusable) || errors.Is(err, ErrOutcomeUnknown) || !unsent(err) || !AnsweredWithError(err) {
					t.Errorf("a %s: %v; want the server's answer to INFO, nothing sent, no refusal of its version", name, err)
				}
				if s.refused.Load() != nil {
					t.Fatalf("after a %s, a refusal of the version is remembered", name)
				}
			}
			if n := accepted.Load(); n != 4 {
				t.Errorf("4 calls dialed %d connections; want 4, one each", n)
			}
		})
	}
}

// dueAgain makes s's refusal of its server due to be checked again, as if its second
// had passed.
func dueAgain(t *testing.T, s *Store) {
	t.Helper()
	r := s.refused.Load()
	if r == nil {
		t.Fatal("the server is not refused")
	}
	s.refused.Store(&refusal{err: r.err, recheck: time.Now()})
}

// TestRecheckFindsAnotherFailure: when the check of a server refused as too old fails
// for another reason — the server busy with a script, then stopped — that failure is
// what the call checking it and every call after it report, dialing, and no refusal
// is remembered; the server answering again is refused again. A Ping that finds the
// server unreachable ends the refusal just so.
func TestRecheckFindsAnotherFailure(t *testing.T) {
	srv := redistest.StartT(t)
	ctx := context.Background()
	admin, err := New(Options{URL: srv.URL, Timeout: 5 * time.Second, PendingTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	s, err := New(Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.minMajor = 256
	tooOld := func(when string) {
		t.Helper()
		if _, err := s.Load(ctx, "s1"); !errors.As(err, new(*ServerTooOldError)) {
			t.Fatalf("a load %s: %v; want the server refused as too old", when, err)
		}
	}
	tooOld("at first")

	// A script that runs until it is killed: past lua-time-limit, the server answers
	// other connections' commands with BUSY.
	if err := admin.client.ConfigSet(ctx, "lua-time-limit", "10").Err(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = admin.client.Eval(context.Background(), "while true do end", nil).Err() }()
	busy := func(err error) bool { return err != nil && strings.Contains(err.Error(), "BUSY") }
	testpoll.Until(t, 10*time.Second, 10*time.Millisecond, "the server to answer BUSY", func() bool {
		c, err := New(Options{URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return busy(c.Ping(ctx))
	})
	dueAgain(t, s)
	for i := range 2 {
		if _, err := s.Load(ctx, "s1"); !busy(err) || errors.Is(err, ErrServerUnusable) {
			t.Errorf("load %d once the refusal is due, the server busy: %v; want BUSY, no refusal", i, err)
		}
	}
	if s.refused.Load() != nil {
		t.Error("a server found busy is remembered as refused")
	}
	// A store's new connection fails its check on a busy server: SCRIPT KILL is sent
	// bare, in the protocol's inline form.
	c, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("SCRIPT KILL\r\n")); err != nil {
		t.Fatal(err)
	}
	if reply, err := bufio.NewReader(c).ReadString('\n'); err != nil || reply != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL: %q %v", reply, err)
	}
	// SCRIPT KILL answers when it has marked the script, which stops at its next
	// check: until then the server still answers BUSY.
	testpoll.Until(t, 10*time.Second, 10*time.Millisecond, "the server to stop answering BUSY", func() bool {
		return !busy(admin.client.Ping(ctx).Err())
	})
	tooOld("once the script is killed")

	dial := func(err error) bool {
		var op *net.OpError
		return errors.As(err, &op) && op.Op == "dial" && !errors.Is(err, ErrServerUnusable)
	}
	srv.Stop()
	dueAgain(t, s)
	for i := range 2 {
		if _, err := s.Load(ctx, "s1"); !dial(err) {
			t.Errorf("load %d once the refusal is due, the server stopped: %v; want a failure to dial, no refusal", i, err)
		}
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	tooOld("once the server is back")
	srv.Stop()
	if err := s.Ping(ctx); !dial(err) {
		t.Errorf("a ping of the server stopped: %v; want a failure to dial", err)
	}
	if _, err := s.Load(ctx, "s1"); !dial(err) {
		t.Errorf("a load after a ping found the server stopped: %v; want a failure to dial, no refusal", err)
	}
}
