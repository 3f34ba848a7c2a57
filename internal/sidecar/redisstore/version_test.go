package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
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

// redisReply is an error reply of the server, as go-redis reports one.
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}

// TestRefusedInfo: a server's refusal of INFO itself lets a connection through; its
// other error replies (still loading its data, busy with a script) or a failure to
// reach it do not, and the failure is one that sent nothing.
func TestRefusedInfo(t *testing.T) {
	for _, tc := range []struct {
		err     error
		refused bool
	}{
		{redisReply("NOPERM User u has no permissions to run the 'info' command"), true},
		{redisReply("ERR unknown command 'INFO', with args beginning with: 'server'"), true},
		{redisReply("LOADING Redis is loading the dataset in memory"), false},
		{redisReply("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT."), false},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, false},
		{nil, false},
	} {
		if got := refusedCommand(tc.err); got != tc.refused {
			t.Errorf("%v: refused %v, want %v", tc.err, got, tc.refused)
		}
		if tc.err != nil && !tc.refused && !unsent(&serverCheckError{err: tc.err}) {
			t.Errorf("a connection whose INFO failed with %v counts as one a call may have been sent on", tc.err)
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
