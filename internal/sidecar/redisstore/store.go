// Package redisstore keeps the engine sidecar's sessions in Redis (or Valkey, or a
// managed Redis), so every replica of an agent host shares one session's counters,
// breakers and activity window ([OAR-FIRE-3], [OAR-PROF-9]); README "Several replicas".
//
// A session is one hash, <prefix><session_id>, whose TTL is the idle TTL, refreshed by
// every occurrence that reads or writes it. Its fields are
//
//	v                        the version: a random token replaced by every commit
//	w                        the activity window, a JSON array of steps, oldest first
//	c<rule>                  a counter: "<fire_count> <breaker_count>"
//	s<rule>\x00<scope>       a scoped counter ([OAR-FIRE-10])
//	p                        a pending marker: "<version> <expiry> <writer>", the
//	                         version a commit left that may yet be corrected, when
//	                         the marker expires (Unix milliseconds, Redis's clock),
//	                         and the store that wrote it
//
// An occurrence reads the whole hash in one round trip (Load) and is evaluated against
// that Snapshot, which implements the engine's CounterStore and ActivityStore for the
// one session ([OAR-FIRE-6]). Its changes are then written by one Lua script that
// applies them only if the version is still the one read (Commit); otherwise another
// replica changed the session meanwhile, the script answers with the session as it now
// is, and the caller re-evaluates against that. A replica keeps the state it last saw
// of recent sessions (CacheSessions) and reads from it instead of Redis: the commit
// checks the version all the same (an occurrence that changed nothing checks it with a
// second, read-only script), so a session that stays on one replica costs one round
// trip an occurrence, and a stale entry costs what a conflict costs.
// The result is that concurrent occurrences of one session on any number of replicas
// take effect in some serial order, as they do inside one engine. The new version is
// chosen by the writer, so a commit whose answer was lost and is sent again is
// recognised as already applied, and an expired, recreated hash never matches a
// version read before it expired. A committed occurrence that turns out not to have
// taken effect as evaluated (the event stream refused one of its events) is evaluated
// again against a Correction, whose commit replaces the first one's changes if the
// session is still at the version that commit left.
//
// No other replica may decide on changes that are then taken back, so a commit that
// may need a correction (its evaluation has events still to publish:
// Snapshot.MayNeedCorrection) also writes the pending marker, and another replica's
// Load that finds it live reads again, after a short wait that doubles each time,
// until it is gone or expired. A correction's commit applies only while the marker
// holds the session, and clears it; past the marker's expiry (Options.PendingTTL) the
// committed changes are final — other replicas may have read them — and the correction
// is refused (ErrCorrectionTooLate). Nothing else clears a marker: when every event is
// published, it simply expires, so the writer pays no round trip for it, and only a
// replica reading the session within PendingTTL of such a commit waits. A writer
// that dies in between holds the session no longer than that either. A replica's own
// markers never hold its own loads: its caller evaluates one session at a time (the
// sidecar's session lock), so a marker it finds of its own is of a commit already
// final or corrected.
package redisstore

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

// Defaults for Options' zero fields.
const (
	DefaultPrefix  = "oar:session:"
	DefaultTimeout = 250 * time.Millisecond
)

// ErrCounterLimit is matched (errors.Is) by the error of an Apply that would give a
// session more than MaxCounters counters.
var ErrCounterLimit = errors.New("session counter limit reached")

// ErrOutcomeUnknown is matched (errors.Is) by the error of a Commit whose changes may
// or may not have been applied: the script was sent and its answer lost, and sending it
// again did not tell either.
var ErrOutcomeUnknown = errors.New("whether the session's changes were committed is unknown")

// ErrPending is matched (errors.Is) by the error of a Load that found the session
// pending other replicas' corrections for longer than Timeout: they kept committing
// changes that may need one, so the session stayed contended.
var ErrPending = errors.New("the session stayed pending another replica's correction")

// ErrUnreadableSession is matched (errors.Is) by the error of a Load that found the
// session's hash holding a counter or an activity window this store cannot read:
// something other than a replica wrote it, or a replica of an incompatible version.
// The server answered, so it is no outage; the session's key needs looking at.
var ErrUnreadableSession = errors.New("the session's hash holds a field this store cannot read")

// ErrCorrectionTooLate is matched (errors.Is) by the error of a Correction's Commit
// that came after the corrected commit's pending marker expired: other replicas may
// have read its changes since, so they stand.
var ErrCorrectionTooLate = errors.New("the correction came after the session's pending time, so other replicas may have read the changes it would take back")

// DefaultPendingTTL is how long a commit that may need a correction holds the session
// when Options give no PendingTTL: many times what a correction takes (a failed write
// to the event stream, an evaluation and a round trip), few enough that another
// replica's call of the same session in that window waits unnoticed.
const DefaultPendingTTL = 5 * time.Millisecond

// CheckPendingTTL refuses a PendingTTL that cannot work with a store's Timeout (the
// error names it timeoutFlag): it must be a whole number of milliseconds, at least one,
// since a marker's expiry is kept in Redis's milliseconds; and below Timeout, since a
// correction is one more call, which Timeout bounds, so a longer hold saves no
// correction and only keeps other replicas' calls of the session waiting past the bound
// of a call. (A Load waits out one marker even so: it counts contention only past
// PendingTTL and a margin.)
func CheckPendingTTL(pending, timeout time.Duration, timeoutFlag string) error {
	if pending < time.Millisecond || pending%time.Millisecond != 0 {
		return fmt.Errorf("%v is not a whole number of milliseconds, at least 1ms: a pending marker's expiry is kept in Redis's milliseconds", pending)
	}
	if pending >= timeout {
		return fmt.Errorf("%v is not below %s, %v: a correction is one more call to the store, which that bounds, so a longer hold saves no correction and keeps other replicas' calls of the session waiting longer than a call may take", pending, timeoutFlag, timeout)
	}
	return nil
}

// The waits of a Load that finds the session pending: the first, doubled at each
// read up to the longest, and never past the marker's expiry.
const (
	firstPendingWait = 500 * time.Microsecond
	maxPendingWait   = 2 * time.Millisecond
	// pendingMargin is what a Load waits past PendingTTL, at least, before a session
	// still pending is contention: a few reads and waits.
	pendingMargin = 10 * time.Millisecond
)

// Observer is told of every round trip and every conflict, and of what pending markers
// cost (the sidecar's metrics).
type Observer interface {
	// RoundTrip records one call to the store: op is "load", "commit" or "validate",
	// and err its failure, a session read that does not parse included
	// (ErrUnreadableSession).
	RoundTrip(op string, took time.Duration, err error)
	// Conflict records a commit refused because another replica changed the session.
	Conflict()
	// PendingWait records a Load that found another replica's pending marker holding
	// the session and waited for it.
	PendingWait()
	// CorrectionTooLate records a Correction refused because the corrected commit's
	// marker had expired (ErrCorrectionTooLate): its changes stood.
	CorrectionTooLate()
	// FailedFast records a call that failed at once, without a round trip: a new
	// connection found the server's version refused (ErrServerUnusable) within the last
	// second, and it is not read again until then.
	FailedFast(op string, err error)
}

// Options configure a Store.
type Options struct {
	// URL is redis://[user@]host:port[/db] or rediss:// for TLS. A password in it is
	// refused: it comes from PasswordFile.
	URL string
	// PasswordFile holds the password (a mounted Secret); CAFile the PEM certificates
	// that verify a rediss:// server (default: the system's).
	PasswordFile, CAFile string
	// Prefix starts every session's key.
	Prefix string
	// IdleTTL is each session key's TTL, refreshed by every occurrence that reads or
	// writes the session; zero keeps keys forever.
	IdleTTL time.Duration
	// Timeout bounds each call to the store, so an outage costs milliseconds, and the
	// time a Load waits for pending sessions (never less than PendingTTL and a margin);
	// DefaultTimeout when zero.
	Timeout time.Duration
	// PendingTTL is how long a commit that may need a correction holds the session
	// pending, for other replicas' loads and for its correction (DefaultPendingTTL when
	// zero): whole milliseconds, below Timeout (CheckPendingTTL).
	PendingTTL time.Duration
	// MaxCounters is the most counters one session holds.
	MaxCounters int
	// CacheSessions is how many sessions' last known state the store keeps to answer
	// Load without a round trip; zero or less keeps none.
	CacheSessions int
	// CacheBytes bounds the heap those states take, as session.Options.MaxBytes
	// bounds the memory store's (session.DefaultMaxBytes when zero or less).
	CacheBytes int
	// Observer, when set, is told of round trips, conflicts, waits for pending markers
	// and corrections too late.
	Observer Observer
	// MinServerMajor is the oldest major version of Redis a connection is used with;
	// zero or less is MinServerVersion's. Only tests raise it, above their server's, to
	// see a server too old refused.
	MinServerMajor int
}

// Store is a Redis connection pool and the commit script. Safe for concurrent use.
type Store struct {
	opt    Options
	client *redis.Client
	// display is the URL without credentials, for logs and /readyz.
	display string
	cache   *sessionCache
	// writer names this store in the pending markers it writes.
	writer string
	// minMajor is the oldest major version of Redis a connection is used with
	// (Options.MinServerMajor).
	minMajor int
	// refused is the server's version as a new connection last refused it; nil once
	// one passed (refusedServer).
	refused atomic.Pointer[refusal]
	// withheld is the error reply with which the server refused the last new
	// connection's INFO, letting it through unchecked; nil once one read the version
	// (VersionUnchecked).
	withheld atomic.Pointer[string]
}

var (
	//go:embed commit.lua
	commitSource string
	//go:embed validate.lua
	validateSource string

	commitScript   = redis.NewScript(commitSource)
	validateScript = redis.NewScript(validateSource)
)

// New checks the options and returns a store; it does not connect (the pool dials on
// first use and again after any failure). It refuses a negative Timeout, and a
// PendingTTL that CheckPendingTTL refuses with the Timeout, as the sidecar's flags do:
// a store built otherwise would hold sessions as no sidecar can. Each new
// connection first reads the server's version, and one older than MinServerVersion, or
// one that does not read, is not used: every call then fails with an error matching
// ErrServerUnusable, without dialing for a second after a connection found it so.
func New(opt Options) (*Store, error) {
	if opt.Prefix == "" {
		opt.Prefix = DefaultPrefix
	}
	if opt.Timeout < 0 {
		return nil, fmt.Errorf("session store Timeout %v is negative", opt.Timeout)
	}
	if opt.Timeout == 0 {
		opt.Timeout = DefaultTimeout
	}
	pendingTTL := "PendingTTL"
	if opt.PendingTTL == 0 {
		opt.PendingTTL, pendingTTL = DefaultPendingTTL, "PendingTTL (the default)"
	}
	if err := CheckPendingTTL(opt.PendingTTL, opt.Timeout, "Timeout"); err != nil {
		return nil, fmt.Errorf("session store %s %w", pendingTTL, err)
	}
	if opt.MinServerMajor <= 0 {
		opt.MinServerMajor = minServerMajor
	}
	u, err := url.Parse(opt.URL)
	if err != nil {
		return nil, fmt.Errorf("session store URL: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("session store URL %q: the scheme must be redis or rediss", u.Redacted())
	}
	if _, has := u.User.Password(); has {
		return nil, fmt.Errorf("session store URL %q carries a password: give it in a file (--session-store-password-file) instead", u.Redacted())
	}
	ro, err := redis.ParseURL(opt.URL)
	if err != nil {
		return nil, fmt.Errorf("session store URL %q: %w", u.Redacted(), err)
	}
	if opt.PasswordFile != "" {
		p, err := os.ReadFile(opt.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("session store password: %w", err)
		}
		ro.Password = strings.TrimRight(string(p), "\r\n")
	}
	if opt.CAFile != "" {
		if ro.TLSConfig == nil {
			return nil, fmt.Errorf("session store: a CA file is for rediss:// URLs, not %q", u.Redacted())
		}
		pem, err := os.ReadFile(opt.CAFile)
		if err != nil {
			return nil, fmt.Errorf("session store CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("session store CA %s: no PEM certificate in it", opt.CAFile)
		}
		ro.TLSConfig.RootCAs = pool
		ro.TLSConfig.MinVersion = tls.VersionTLS12
	}
	// Every call is bounded by Timeout: dialing, reading, writing, the context. A
	// failed call is not retried by the client (the engine's on_error decides what a
	// failure means, at once; only Commit sends a commit whose answer was lost once
	// more, which is safe); the pool reconnects on the next call.
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = opt.Timeout, opt.Timeout, opt.Timeout
	ro.ContextTimeoutEnabled = true
	ro.MaxRetries = -1
	ro.DialerRetries = 1
	// Load's pipeline runs on the one pool: go-redis's dedicated pipeline pool hands a
	// pipeline whose new connection failed (dialing, or checkServer's refusal) to the
	// main pool, which dials again, so a refused or unreachable server would cost a
	// load two connections and their timeouts. A load is three small commands; the
	// pipeline pool's larger buffers buy it nothing.
	ro.PipelinePoolSize = -1
	ro.DisableIdentity = true
	ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	s := &Store{opt: opt, display: u.Redacted(), cache: newSessionCache(opt.CacheSessions, opt.CacheBytes), writer: newVersion(), minMajor: opt.MinServerMajor}
	ro.OnConnect = s.checkServer
	s.client = redis.NewClient(ro)
	return s, nil
}

// newVersion is a new random token: a session's version, or a store's name.
func newVersion() string {
	var token [12]byte
	_, _ = rand.Read(token[:])
	return hex.EncodeToString(token[:])
}

// String is the store's URL without credentials.
func (s *Store) String() string { return s.display }

// Close closes the pool.
func (s *Store) Close() error { return s.client.Close() }

// CachedSessions returns how many sessions' states this replica caches.
func (s *Store) CachedSessions() int { return s.cache.len() }

// CachedBytes returns what the states this replica caches are charged against
// Options.CacheBytes.
func (s *Store) CachedBytes() int { return s.cache.charged() }

// Ping checks that the store answers. Unlike other calls, it dials even while the
// server's version is refused (refusedServer), so /readyz says what the server is now;
// unless its new connection refuses the server again, it ends the refusal
// (endRecheck): a connection that passes, or a failure of another kind (unreachable,
// LOADING), is what the calls after it then find.
func (s *Store) Ping(ctx context.Context) error {
	refused := s.refused.Load()
	defer s.endRecheck(refused)
	ctx, cancel := context.WithTimeout(ctx, s.opt.Timeout)
	defer cancel()
	return s.client.Ping(ctx).Err()
}

func (s *Store) key(session string) string { return s.opt.Prefix + session }

// Load returns a snapshot of a session's state: the state the cache holds, or else
// what one round trip reads. A session another replica's commit holds pending a
// possible correction is read again, after a short wait that doubles each time, until
// the marker is gone or expired; one still held after Timeout, or after one marker's
// PendingTTL and a margin when that is longer (replicas that keep committing such
// changes), is an error matching ErrPending. The cache never holds a
// pending state.
func (s *Store) Load(ctx context.Context, session string) (*Snapshot, error) {
	if st := s.cache.get(session); st != nil {
		return s.snapshot(session, st, true), nil
	}
	bound := s.pendingBound()
	giveUp := time.Now().Add(bound)
	waited := false
	for wait := firstPendingWait; ; wait = min(2*wait, maxPendingWait) {
		st, pending, err := s.read(ctx, session)
		if err != nil {
			return nil, err
		}
		if pending <= 0 {
			s.cache.put(session, st)
			return s.snapshot(session, st, false), nil
		}
		if !time.Now().Before(giveUp) {
			return nil, fmt.Errorf("session %q in %s, pending for %v: %w", session, s.display, bound, ErrPending)
		}
		if !waited && s.opt.Observer != nil {
			s.opt.Observer.PendingWait()
		}
		waited = true
		if err := sleep(ctx, min(wait, pending)); err != nil {
			return nil, fmt.Errorf("reading session %q from %s, pending another replica's correction: %w", session, s.display, err)
		}
	}
}

// pendingBound is how long a Load waits for a session held pending before it is
// contention: Timeout, but never less than one marker lasts (PendingTTL, which the
// replicas share) and a margin for the reads, so waiting out a single marker is never
// contention however little Timeout exceeds PendingTTL.
func (s *Store) pendingBound() time.Duration {
	return max(s.opt.Timeout, s.opt.PendingTTL+pendingMargin)
}

// read reads a session's state in one round trip, and how long another replica's
// pending marker still holds it (zero or less: it does not).
func (s *Store) read(ctx context.Context, session string) (*state, time.Duration, error) {
	recheck, err := s.refusedServer()
	if err != nil {
		s.failedFast("load", err)
		return nil, 0, fmt.Errorf("reading session %q from %s: %w", session, s.display, err)
	}
	defer s.endRecheck(recheck)
	ctx, cancel := context.WithTimeout(ctx, s.opt.Timeout)
	defer cancel()
	start := time.Now()
	// A session read is a session in use: its TTL is refreshed in the same round trip,
	// as a session in memory stays while it is read. Redis's clock, read in the same
	// round trip, says whether a pending marker has expired; it is read first, since
	// another client's correction may run between the pipeline's commands: a "now"
	// from before the fields can only find a marker still live that has just expired
	// (a wait), never take a marker as expired before its correction could land.
	pipe := s.client.Pipeline()
	now := pipe.Time(ctx)
	read := pipe.HGetAll(ctx, s.key(session))
	if s.opt.IdleTTL > 0 {
		pipe.PExpire(ctx, s.key(session), s.opt.IdleTTL)
	}
	_, err = pipe.Exec(ctx)
	took := time.Since(start)
	if err != nil {
		s.observe("load", took, err)
		return nil, 0, fmt.Errorf("reading session %q from %s: %w", session, s.display, err)
	}
	fields := read.Val()
	// A session the store cannot read fails the load as surely as an outage does.
	st, err := s.parse(session, fields)
	s.observe("load", took, err)
	if err != nil {
		return nil, 0, err
	}
	return st, s.pendingFor(fields, now.Val()), nil
}

// pendingFor is how long another store's pending marker holds a session's fields at
// now, by Redis's clock; zero when none does. A marker of another version, or one
// that does not read, holds nothing: it is advisory, and the next commit replaces it.
func (s *Store) pendingFor(fields map[string]string, now time.Time) time.Duration {
	marker := strings.Fields(fields["p"])
	if len(marker) != 3 || marker[0] != fields["v"] || marker[2] == s.writer {
		return 0
	}
	ms, err := strconv.ParseInt(marker[1], 10, 64)
	if err != nil {
		return 0
	}
	return time.UnixMilli(ms).Sub(now)
}

// sleep waits for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) snapshot(session string, st *state, cached bool) *Snapshot {
	snap := &Snapshot{session: session, version: st.version, window: st.window, read: st.window, cached: cached,
		maxCounters: s.opt.MaxCounters, counters: make(map[string]counts, len(st.counters))}
	for f, c := range st.counters {
		snap.counters[f] = counts{base: c, now: c}
	}
	return snap
}

// parse reads a session hash's fields.
func (s *Store) parse(session string, fields map[string]string) (*state, error) {
	st := &state{version: fields["v"], counters: make(map[string]engine.Counts, len(fields))}
	for f, v := range fields {
		switch {
		case f == "w":
			w, err := decodeWindow(v)
			if err != nil {
				return nil, fmt.Errorf("session %q in %s: %w: the activity window %q: %w", session, s.display, ErrUnreadableSession, v, err)
			}
			st.window = w
		case strings.HasPrefix(f, "c"), strings.HasPrefix(f, "s"):
			c, err := parseCounts(v)
			if err != nil {
				return nil, fmt.Errorf("session %q in %s: %w: counter %q: %w", session, s.display, ErrUnreadableSession, f, err)
			}
			st.counters[f] = c
		}
	}
	return st, nil
}

// Commit writes the snapshot's changes, and refreshes the session's TTL, only if the
// session is still at the version Load read (for a Correction, the version the
// corrected Commit left). It reports false when another writer changed it meanwhile;
// the next Load then returns the session as the refusal found it. A snapshot with no
// changes writes nothing: read by a round trip, it was read atomically, so its
// evaluation already took effect in a serial order; read from the cache, one round trip
// checks that its version is still current; a Correction with none leaves the corrected
// commit as it is. A snapshot marked MayNeedCorrection writes the session's pending
// marker with its changes, any other commit clears it, and a Correction applies only
// while the corrected commit's marker holds the session (else ErrCorrectionTooLate);
// a Correction of a commit that changed nothing wrote no marker and exposed nothing to
// other replicas, so it is committed as any snapshot read at that version is.
// A commit that may have reached the store but got no answer is sent
// once more, with the same new version, so a first one that was applied is recognised;
// when that does not settle it, the error matches ErrOutcomeUnknown. After a successful
// Commit, snap.Versions reports the version read and the version left; after one whose
// outcome is unknown, the version read and the version it would have left.
func (s *Store) Commit(ctx context.Context, snap *Snapshot) (bool, error) {
	expect, fields, window := snap.changes()
	if len(fields) == 0 && !window {
		var err error
		ok := true
		if snap.cached {
			ok, err = s.run(ctx, "validate", validateScript, snap, expect, s.opt.IdleTTL.Milliseconds())
		}
		snap.written, snap.committed = expect, ok
		return ok, err
	}
	version := newVersion()
	args := []any{expect, version, s.opt.IdleTTL.Milliseconds(), "", "", 0, s.writer, ""}
	if window {
		args[3], args[4] = "1", encodeWindow(snap.window)
	}
	if snap.correctable {
		args[5] = s.opt.PendingTTL.Milliseconds()
	}
	if snap.correctsWrite() {
		args[7] = "1"
	}
	args = append(args, fields...)
	committed := &state{version: version, window: snap.window, counters: make(map[string]engine.Counts, len(snap.counters))}
	for f, c := range snap.counters {
		committed.counters[f] = c.now
	}
	ok, err := s.run(ctx, "commit", commitScript, snap, args...)
	if err != nil && !unsent(err) && !errors.Is(err, ErrCorrectionTooLate) {
		// The script may have run with its answer lost. Sent again, it answers 1 if the
		// first one was applied (the session is then at the new version) or applies it
		// now; a correction too late was not applied (the session is still at the version
		// it expects); a conflict still leaves open that the first was applied and
		// another writer changed the session since, and a second failure leaves it all
		// open.
		var again error
		if ok, again = s.run(ctx, "commit", commitScript, snap, args...); again == nil && !ok {
			again = errors.New("it found the session changed by another writer")
		}
		if errors.Is(again, ErrCorrectionTooLate) {
			return false, again
		}
		if again != nil {
			snap.written = version
			return false, fmt.Errorf("%w: %w; sent again, %w", ErrOutcomeUnknown, err, again)
		}
		err = nil
	}
	if ok {
		s.cache.put(snap.session, committed)
		snap.written, snap.committed = version, true
	}
	return ok, err
}

// run runs the commit or the validate script for snap. A reply of 1 is success; a list
// is the session's fields as another writer left them, which the cache takes for the
// next attempt.
func (s *Store) run(ctx context.Context, op string, script *redis.Script, snap *Snapshot, args ...any) (bool, error) {
	recheck, err := s.refusedServer()
	if err != nil {
		s.failedFast(op, err)
		s.cache.drop(snap.session)
		return false, fmt.Errorf("%s of session %q in %s: %w", op, snap.session, s.display, err)
	}
	defer s.endRecheck(recheck)
	ctx, cancel := context.WithTimeout(ctx, s.opt.Timeout)
	defer cancel()
	start := time.Now()
	reply, err := script.Run(ctx, s.client, []string{s.key(snap.session)}, args...).Result()
	s.observe(op, time.Since(start), err)
	if err != nil {
		s.cache.drop(snap.session)
		return false, fmt.Errorf("%s of session %q in %s: %w", op, snap.session, s.display, err)
	}
	switch r := reply.(type) {
	case int64:
		switch r {
		case 1:
			return true, nil
		case 0:
			if s.opt.Observer != nil {
				s.opt.Observer.CorrectionTooLate()
			}
			return false, fmt.Errorf("%s of session %q in %s: %w", op, snap.session, s.display, ErrCorrectionTooLate)
		}
	case []any:
		s.conflict(snap.session, r)
		return false, nil
	}
	s.cache.drop(snap.session)
	return false, fmt.Errorf("%s of session %q in %s: unexpected reply %v", op, snap.session, s.display, reply)
}

// unsent reports whether a failed call certainly never reached the store: no
// connection could be had (dialing failed, the server's version refuses it or could
// not be read, the pool is closed or exhausted), or the store answered with an error.
// Any other failure may have come after the store ran the call.
func unsent(err error) bool {
	var op *net.OpError
	var answered redis.Error
	var check *serverCheckError
	return errors.As(err, &op) && op.Op == "dial" || errors.As(err, &answered) || errors.Is(err, ErrServerUnusable) || errors.As(err, &check) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted)
}

// conflict records a refused commit or a stale cached read, and caches the session's
// fields the refusal returned (a flat list of field, value), unless a pending marker
// may hold them: the next Load then reads the session itself, and waits for it.
func (s *Store) conflict(session string, list []any) {
	if s.opt.Observer != nil {
		s.opt.Observer.Conflict()
	}
	fields := make(map[string]string, len(list)/2)
	for i := 0; i+1 < len(list); i += 2 {
		f, fok := list[i].(string)
		v, vok := list[i+1].(string)
		if !fok || !vok {
			s.cache.drop(session)
			return
		}
		fields[f] = v
	}
	if _, marked := fields["p"]; marked {
		s.cache.drop(session)
		return
	}
	st, err := s.parse(session, fields)
	if err != nil {
		// The next Load reads the session itself and reports what is wrong with it.
		s.cache.drop(session)
		return
	}
	s.cache.put(session, st)
}

func (s *Store) observe(op string, took time.Duration, err error) {
	if s.opt.Observer != nil {
		s.opt.Observer.RoundTrip(op, took, err)
	}
}

func (s *Store) failedFast(op string, err error) {
	if s.opt.Observer != nil {
		s.opt.Observer.FailedFast(op, err)
	}
}

// MemoryUsage returns the bytes Redis reports for a session's key (MEMORY USAGE), or
// zero when the session has none.
func (s *Store) MemoryUsage(ctx context.Context, session string) (int64, error) {
	n, err := s.client.MemoryUsage(ctx, s.key(session)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// TTL returns the remaining TTL of a session's key (negative when it has none).
func (s *Store) TTL(ctx context.Context, session string) (time.Duration, error) {
	return s.client.PTTL(ctx, s.key(session)).Result()
}

// encodeWindow writes the activity window as a JSON array of its steps. A step is a
// tool name, a sequence of code points that may hold a lone surrogate ([OAR-FACT-23]);
// it is written by escape (codepoint.AppendJSON), where encoding/json would make it
// U+FFFD and so a different step.
func encodeWindow(window []string) string {
	b := []byte{'['}
	for i, step := range window {
		if i > 0 {
			b = append(b, ',')
		}
		b = codepoint.AppendJSON(b, step)
	}
	return string(append(b, ']'))
}

// decodeWindow reads what encodeWindow wrote, lone surrogates kept (engine.DecodeJSON).
func decodeWindow(v string) ([]string, error) {
	doc, err := engine.DecodeJSON([]byte(v))
	if err != nil {
		return nil, err
	}
	list, ok := doc.([]any)
	if !ok {
		return nil, errors.New("not a JSON array")
	}
	window := make([]string, len(list))
	for i, step := range list {
		if window[i], ok = step.(string); !ok {
			return nil, fmt.Errorf("step %d is not a string", i)
		}
	}
	return window, nil
}

func parseCounts(v string) (counts engine.Counts, err error) {
	fire, breaker, ok := strings.Cut(v, " ")
	if !ok {
		return counts, errors.New("not two counts")
	}
	if counts.Fire, err = strconv.ParseInt(fire, 10, 64); err != nil {
		return counts, err
	}
	counts.Breaker, err = strconv.ParseInt(breaker, 10, 64)
	return counts, err
}

func formatCounts(c engine.Counts) string {
	return strconv.FormatInt(c.Fire, 10) + " " + strconv.FormatInt(c.Breaker, 10)
}

// SetObserver sets the Observer; call it before the store is used.
func (s *Store) SetObserver(o Observer) { s.opt.Observer = o }

// SetLogger routes the Redis client's own messages (a failed dial, say) into log at
// debug level: every failure already reaches the answer's failures and the metrics.
// The stores' own messages go there too, at info level: a server that does not tell
// its version (VersionUnchecked). The logger is process-wide, as the client's is.
func SetLogger(log logr.Logger) {
	redis.SetLogger(logAdapter{log})
	storeLog.Store(&log)
}

// storeLog is the logger SetLogger set, or none.
var storeLog atomic.Pointer[logr.Logger]

func logger() logr.Logger {
	if l := storeLog.Load(); l != nil {
		return *l
	}
	return logr.Discard()
}

// VersionUnchecked is the error reply with which the server refused the last new
// connection's INFO, or "" when that connection read the server's version or none was
// made yet. Such a connection is used with its version unchecked (checkServer), so a
// server older than MinServerVersion is found only by the commit script's failure.
func (s *Store) VersionUnchecked() string {
	if r := s.withheld.Load(); r != nil {
		return *r
	}
	return ""
}

type logAdapter struct{ log logr.Logger }

func (l logAdapter) Printf(_ context.Context, format string, v ...any) {
	l.log.V(1).Info(fmt.Sprintf(format, v...))
}
