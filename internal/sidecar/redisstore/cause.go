package redisstore

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
)

// Cause is what a failed call found of the store. The label of the sidecar's failure
// metric and the words of an answer's failures and /readyz both come from it, so an
// alert on one reads as the other.
type Cause string

// The causes, from the most specific.
const (
	// CauseUnusable: the server's version refuses it (ErrServerUnusable).
	CauseUnusable Cause = "unusable"
	// CauseUnreadableState: the session's hash holds a field no replica of this
	// version wrote (ErrUnreadableSession).
	CauseUnreadableState Cause = "unreadable_state"
	// CauseRefusing: the server answered the call, or its new connection's version
	// check, with an error reply (AnsweredWithError).
	CauseRefusing Cause = "refusing"
	// CauseTimeout: a connection was had, or waited for, and no answer came within
	// Options.Timeout.
	CauseTimeout Cause = "timeout"
	// CauseUnreachable: any other failure; no connection could be dialed, or it was
	// lost.
	CauseUnreachable Cause = "unreachable"
)

// CauseOf classifies err, the failure of a call to the store.
func CauseOf(err error) Cause {
	switch {
	case errors.Is(err, ErrServerUnusable):
		return CauseUnusable
	case errors.Is(err, ErrUnreadableSession):
		return CauseUnreadableState
	case AnsweredWithError(err):
		return CauseRefusing
	case timedOut(err):
		return CauseTimeout
	}
	return CauseUnreachable
}

// timedOut reports whether err, or the failure of the version check it carries, is
// an answer that did not come in time, or a wait for a pooled connection that ran out.
// A dial that timed out is no such thing: nothing was reached.
func timedOut(err error) bool {
	var check *serverCheckError
	if errors.As(err, &check) {
		err = check.err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrPoolTimeout)
}
