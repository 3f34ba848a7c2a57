package redisstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// MinServerVersion is the oldest Redis the commit script runs on: it reads the
// server's clock (TIME) before it writes, which an older server refuses in a script
// that does not ask for effects replication.
const MinServerVersion = "5.0"

// minServerMajor is MinServerVersion's major version, which is all a comparison needs.
const minServerMajor = 5

// ErrServerUnusable is matched (errors.Is) by the error of every call to a store whose
// server's version refuses it: a ServerTooOldError or an UnreadableVersionError. No
// connection to such a server is used.
var ErrServerUnusable = errors.New("the session store's server is unusable")

// ServerTooOldError is the error of every call to a store whose server reports a
// version older than MinServerVersion: no connection to it is used.
type ServerTooOldError struct {
	// Version is the server's redis_version.
	Version string
}

func (e *ServerTooOldError) Error() string {
	return fmt.Sprintf("the server is Redis %s; the session store needs Redis %s or later (its commit script reads the server's clock before it writes)", e.Version, MinServerVersion)
}

// Is makes the error match ErrServerUnusable.
func (e *ServerTooOldError) Is(target error) bool { return target == ErrServerUnusable }

// UnreadableVersionError is the error of every call to a store whose server reports a
// redis_version whose major version is not a number an int holds: nothing says it is
// MinServerVersion or later, so no connection to it is used.
type UnreadableVersionError struct {
	// Version is the server's redis_version.
	Version string
}

func (e *UnreadableVersionError) Error() string {
	return fmt.Sprintf("the server reports redis_version %q, which does not read as a version; the session store needs Redis %s or later (its commit script reads the server's clock before it writes)", e.Version, MinServerVersion)
}

// Is makes the error match ErrServerUnusable.
func (e *UnreadableVersionError) Is(target error) bool { return target == ErrServerUnusable }

// serverCheckError is the failure of a new connection's INFO server. It wraps nothing:
// go-redis unwraps an OnConnect error one level, which would leave a bare read error
// that says neither what failed nor that no call was sent on the connection (unsent).
type serverCheckError struct {
	err error
}

func (e *serverCheckError) Error() string {
	return "reading the server's version (INFO server): " + e.err.Error()
}

// serverRecheck is how long a store remembers its server's version refused: its calls
// fail at once with that refusal, dialing nothing, and the first call after it dials
// and reads the version again. A second bounds what a server refused costs, one
// call's connections a second from each replica whatever the rate of calls (each call
// would dial otherwise), and how long a server upgraded in place stays refused.
// Timeout does not fit: it is sized for one call (milliseconds), and a check that
// often would still be hundreds of connections a second.
const serverRecheck = time.Second

// refusal is the server's version refused by a new connection, and when a call next
// reads it again.
type refusal struct {
	err     error
	recheck time.Time
}

// refusedServer is the refusal of the server's version a call fails with, without a
// round trip, or nil when the call may go ahead: no connection was refused since one
// passed, or the refusal is due to be checked again. The first call past serverRecheck
// checks it (its new connection reads the version), and the others fail meanwhile, for
// another serverRecheck at most. That call is given the refusal it checks (recheck),
// which it hands to endRecheck when it is over.
func (s *Store) refusedServer() (recheck *refusal, err error) {
	for {
		r := s.refused.Load()
		if r == nil {
			return nil, nil
		}
		now := time.Now()
		if now.Before(r.recheck) {
			return nil, r.err
		}
		next := &refusal{err: r.err, recheck: now.Add(serverRecheck)}
		if s.refused.CompareAndSwap(r, next) {
			return next, nil
		}
	}
}

// endRecheck ends r, the refusal a call checked again (refusedServer) or a Ping found,
// once that call is over, unless a new connection refused the server meanwhile, whose
// refusal then stands. A connection that passed has ended it already; a call that
// failed otherwise (the server unreachable, LOADING or BUSY) reported what the server
// is now, and that is no refusal of its version: the calls after it dial and say so
// too, rather than repeat the old refusal for another serverRecheck.
func (s *Store) endRecheck(r *refusal) {
	if r != nil {
		s.refused.CompareAndSwap(r, nil)
	}
}

// checkServer refuses a new connection to a server older than MinServerVersion (the
// store's minMajor), by the redis_version of its INFO server, so every call fails with
// an error that says so rather than with the commit script's refusal; it is the
// client's OnConnect. A server that answers INFO with an error reply that is no state
// of its own (versionWithheld: an ACL without INFO, NOPERM; a server that renamed it,
// an unknown command; a proxy that does not forward it) or whose INFO has no
// redis_version is let through: nothing says it is too old, and the commit script
// remains the judge. A server that does not serve the connection now (notServing: it
// is LOADING, BUSY, ...) or a lost connection fails the connection, whose version is
// then unknown. A refusal is remembered for serverRecheck, and a connection let
// through ends it. A server withholding its version is logged once, until a connection
// reads it again (VersionUnchecked).
func (s *Store) checkServer(ctx context.Context, cn *redis.Conn) error {
	info, err := cn.Info(ctx, "server").Result()
	if versionWithheld(err) {
		s.refused.Store(nil)
		if reply := err.Error(); s.withheld.Swap(&reply) == nil {
			logger().Info("the session store's server does not tell its version: its connections are used unchecked, and a server older than Redis "+MinServerVersion+" will fail every commit",
				"store", s.display, "reply", reply)
		}
		return nil
	}
	if err != nil {
		return &serverCheckError{err: err}
	}
	s.withheld.Store(nil)
	if err := checkVersion(info, s.minMajor); err != nil {
		s.refused.Store(&refusal{err: err, recheck: time.Now().Add(serverRecheck)})
		return err
	}
	s.refused.Store(nil)
	return nil
}

// versionWithheld reports whether err, the failure of INFO, is an error reply that
// refuses the command itself, so the server will not tell its version on any
// connection: every error reply but notServing's. Who refuses it cannot always be told
// (a proxy's wording is its own: "ERR unsupported command", "ERR command not allowed",
// "unsupported command"), and failing such a connection would fail every call, each
// dialing again, on a server that would serve them; letting it through costs only the
// check, which the commit script makes anyway. So a proxy's own reply that its server
// is down lets a connection through too, and the calls on it then fail with what the
// proxy answers them.
func versionWithheld(err error) bool {
	var answered redis.Error
	return errors.As(err, &answered) && !notServing(answered.Error())
}

// notServing reports whether msg, an error reply, says the server serves no command on
// the connection for now, INFO included, rather than refuses INFO: it is loading its
// data (LOADING), running a script past its time limit (BUSY; not BUSYKEY nor
// BUSYGROUP, which are about a key), a replica cut off from its primary (MASTERDOWN),
// a cluster node without its slots (CLUSTERDOWN) or amid a resharding (TRYAGAIN), or
// holds as many clients as it may; or the connection is not authenticated (NOAUTH:
// the store was given no password). The same server would tell its version once that
// passes, or to a connection given the password, so the version is not taken as
// withheld.
func notServing(msg string) bool {
	code, _, _ := strings.Cut(msg, " ")
	switch code {
	case "LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "NOAUTH":
		return true
	}
	return strings.HasPrefix(msg, "ERR max number of clients reached")
}

// AnsweredWithError reports whether err, the failure of a call to the store, is the
// server's error reply to the call, or to the INFO of the call's new connection: the
// server was reached and refused the call (it is loading, busy, out of memory, the
// commit script failed, ...), which is no outage of the network.
func AnsweredWithError(err error) bool {
	var answered redis.Error
	var check *serverCheckError
	return errors.As(err, &answered) || errors.As(err, &check) && errors.As(check.err, &answered)
}

// checkVersion reads redis_version from the text of INFO server and refuses one whose
// major version is below minMajor (ServerTooOldError), or is not decimal digits that
// an int holds (UnreadableVersionError): a version read only in part, or clamped to
// the largest int, would pass unseen. What follows the major version is not read. A
// missing redis_version is not refused.
func checkVersion(info string, minMajor int) error {
	lines := bufio.NewScanner(strings.NewReader(info))
	for lines.Scan() {
		v, ok := strings.CutPrefix(lines.Text(), "redis_version:")
		if !ok {
			continue
		}
		version := strings.TrimSpace(v)
		major, _, _ := strings.Cut(version, ".")
		n, err := strconv.Atoi(major)
		if err != nil || strings.Trim(major, "0123456789") != "" {
			return &UnreadableVersionError{Version: version}
		}
		if n < minMajor {
			return &ServerTooOldError{Version: version}
		}
		return nil
	}
	return nil
}
