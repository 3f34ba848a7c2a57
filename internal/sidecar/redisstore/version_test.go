package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestCheckVersion: a server whose INFO server reports a major version below 5 is
// refused, naming the version found and the one needed; 5.0 and later pass, and so does
// a server whose version is missing or does not read (nothing says it is too old).
func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		refused bool
	}{
		{"4.0.14", true},
		{"3.2.12", true},
		{"2.8.24", true},
		{"4.9.999", true},
		{"5.0.0", false},
		{"5.0.14", false},
		{"6.2.6", false},
		{"7.2.4", false},
		{"255.255.255", false},
		{"10.0.0", false},
		{"-4.0.0", false},
		{"+4.0.0", false},
		{"garbage", false},
		{"", false},
		{".4", false},
		{"4x.0", false},
	} {
		t.Run(tc.version, func(t *testing.T) {
			info := "# Server\r\nredis_git_sha1:00000000\r\nredis_version:" + tc.version + "\r\nredis_mode:standalone\r\n"
			err := checkVersion(info, minServerMajor)
			var old *ServerTooOldError
			if refused := errors.As(err, &old); refused != tc.refused || !tc.refused && err != nil {
				t.Fatalf("version %q: %v; want refused %v", tc.version, err, tc.refused)
			}
			if tc.refused && (old.Version != tc.version || !strings.Contains(err.Error(), "Redis "+tc.version+"; the session store needs Redis 5.0 or later")) {
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
