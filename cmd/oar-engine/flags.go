package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/sidecar"
	"github.com/oar-operator/oar-operator/internal/sidecar/events"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
	"github.com/oar-operator/oar-operator/internal/sidecar/session"
	"github.com/oar-operator/oar-operator/internal/sidecar/standalone"
)

const usageHead = `Usage: oar-engine [flags]

The OAR engine sidecar. It loads the rule bundle the oar-operator publishes for a
Capability (the ConfigMap <capability>-oar-bundle, mounted as a directory, never with
subPath), reloads it when the kubelet swaps in a new version (a bundle that fails to
load is refused and the previous one keeps serving), and answers on --address:--port:

  POST /v1/evaluate    one occurrence {anchor, session_id, facts, content, tool_call,
                       recent_activity} -> the decision, and the bundle digest that
                       answered (also in the X-OAR-Bundle-Digest header)
  GET  /v1/bundle      served digest, packs with generations and rule ids, reload status
  GET  /v1/capability  the served capability document
  GET  /v1/events      publish_event records as server-sent events
  GET  /v1/openapi.json  the OpenAPI 3.1 document of this API (docs/sidecar-openapi.json)
  GET  /healthz, /readyz (ready once a bundle is loaded), /metrics (Prometheus)

--probe-address serves /healthz, /readyz and /metrics on the pod's IP for the
kubelet and Prometheus. With --session-store=redis://… every replica shares each
session's counters, breakers and activity window in Redis (one hash per session, its
TTL --session-idle-ttl, refreshed by every read or write); a rule needing session state while Redis
is unreachable or refuses its calls follows its on_error, and /readyz reports the store without failing on
it. By default, counters and activity windows are kept per session in memory,
bounded by --max-sessions, --session-idle-ttl, --max-counters and
--max-session-bytes, across reloads. --max-session-bytes bounds the heap sessions
take, in memory or in a replica's cache of Redis states: every session, counter and
window place is charged what it costs, with the text occurrences supply (session ids,
counter scope values, activity steps), and the least recently used sessions are
forgotten to make room. The heap they take stays within twice it, fragmentation
included; give it at most a quarter of the container's memory limit (the injector
does). A session_id is at most 1,024 bytes. --max-request-bytes bounds the heap the
requests being evaluated take together: a body can decode to about 50 times its
length (a tool call whose arguments are a list of tiny objects), so a request waits
its turn rather than take the sidecar past its memory limit; the injector gives it an
eighth of the limit.
Logs are JSON on stderr; publish_event records are JSON lines on stdout.

--decision-log=stdout|FILE (off by default) writes one JSON line of kind "decision"
per evaluated occurrence, for oarctl replay: how a rule change would have decided
what was logged. --decision-log-content says how much of the content it keeps
(default omit: its length only), --decision-log-sample which fraction of sessions.
It never delays or fails an evaluation: lines wait in a bounded buffer, and those
that do not fit are dropped and counted in oar_engine_decision_log_dropped_total.

The Go runtime's variables tune it; the defaults are kept, on measurement (hack/loadgen):
GOMAXPROCS follows the container's CPU limit, else every CPU, each caching memory of
its own (the injector sets it to the CPU request rounded up, at least 2). One CPU is
plenty at a thousand requests a second, but give it two for bursts of thousands: with
one, requests queue behind each other (p99 at 10,000/s went from about 3 ms to 7-24 ms).
GOMEMLIMIT, a little below the container's memory limit, makes the collector work
harder before the kernel would kill the sidecar. GOGC (default 100) trades memory for
fewer collections; at 1,000 requests a second there are about two a second, each a
few milliseconds of background work, and neither GOGC=400 nor GOGC=off moved the p99.

On a virtual machine the p99 at a thousand requests a second is mostly the time it
takes to wake an idle virtual CPU for each request, not the engine: for agent hosts
that need a sub-millisecond tail, run them on nodes tuned for latency, whose CPUs poll
instead of halting when idle (a PM QoS wake-up latency of 0, as tuned's
latency-performance profile sets).

Standalone mode (--capability FILE --rules FILE|DIR [--rules ...] [--config FILE ...],
exclusive with --bundle-dir) serves plain OAR documents instead of a bundle: one pack
per rule file, configurations in the order given, reloaded when a file changes, with
a bad edit refused as a bad bundle is. It is how a developer runs the engine on a
laptop and how hosts outside Kubernetes use it; --probe-address "" disables the probe
listener.

Flags:
`

// options are the command's flags.
type options struct {
	address      string
	port         int
	probeAddress string
	bundleDir    string
	documents    standalone.Files
	// standalone is set when any of --capability, --rules, --config is given;
	// bundleDirSet when --bundle-dir is.
	standalone, bundleDirSet bool
	reloadInterval           time.Duration
	maxSessions              int
	sessionIdleTTL           time.Duration
	maxCounters              int
	maxTotal                 int
	maxBytes                 int
	maxBodyBytes             int64
	maxRequestBytes          int64
	sessionStore             string
	storePassword            string
	storeCA                  string
	storePrefix              string
	storeTimeout             time.Duration
	storePendingTTL          time.Duration
	storeCache               int
	storeRetries             int
	eventBuffer              int
	decisionLog              string
	decisionLogContent       decisionlog.ContentMode
	decisionLogSample        float64
	decisionLogBuffer        int
	shutdown                 time.Duration
	logLevel                 slog.Level
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("oar-engine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHead)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.address, "address", "127.0.0.1", "`address` the API listens on; keep it on loopback, the API is for the agent in the same pod")
	fs.IntVar(&o.port, "port", 8181, "`port` the API listens on (0: any free port)")
	fs.StringVar(&o.probeAddress, "probe-address", ":8182", "`host:port` serving /healthz, /readyz and /metrics for the kubelet and Prometheus (empty: none)")
	fs.StringVar(&o.bundleDir, "bundle-dir", "/etc/oar/bundle", "`directory` where the bundle ConfigMap is mounted")
	fs.StringVar(&o.documents.Capability, "capability", "", "standalone mode: the capability document's `file`; serves plain OAR documents instead of --bundle-dir")
	fs.Func("rules", "standalone mode: a rule `file`, or a directory of .yaml/.yml/.json rule files; repeat for more", func(v string) error {
		o.documents.Rules = append(o.documents.Rules, v)
		return nil
	})
	fs.Func("config", "standalone mode: a configuration document's `file`, applied in the order given; repeat for more", func(v string) error {
		o.documents.Configs = append(o.documents.Configs, v)
		return nil
	})
	fs.DurationVar(&o.reloadInterval, "reload-interval", reload.DefaultInterval, "how often to check --bundle-dir (or the standalone documents) for a change")
	fs.IntVar(&o.maxSessions, "max-sessions", session.DefaultMaxSessions, "most sessions whose counters and activity are held; the least recently used is forgotten first")
	fs.DurationVar(&o.sessionIdleTTL, "session-idle-ttl", session.DefaultIdleTTL, "forget a session idle for this long (0: only --max-sessions bounds them)")
	fs.IntVar(&o.maxCounters, "max-counters-per-session", session.DefaultMaxCounters, "most counters one session holds; a rule that needs another one is handled by its on_error")
	fs.IntVar(&o.maxTotal, "max-counters", session.DefaultMaxTotalCounters, "most counters all sessions hold together; a new one forgets the least recently used sessions to make room")
	fs.IntVar(&o.maxBytes, "max-session-bytes", session.DefaultMaxBytes, "most `bytes` of heap all sessions take together (in memory, or a replica's cache of Redis states), their ids, counter scope values and activity steps included; more forgets the least recently used sessions to make room")
	fs.StringVar(&o.sessionStore, "session-store", "memory", "where sessions live: memory (this process), or redis://[user@]host:port[/db] or rediss://… (TLS) to share them with every replica; the password and CA come from files, never from this flag")
	fs.StringVar(&o.storePassword, "session-store-password-file", "", "`file` holding the Redis password (a mounted Secret)")
	fs.StringVar(&o.storeCA, "session-store-ca-file", "", "`file` of PEM certificates that verify a rediss:// server (default: the system's)")
	fs.StringVar(&o.storePrefix, "session-store-prefix", redisstore.DefaultPrefix, "`prefix` of every session's Redis key")
	fs.DurationVar(&o.storeTimeout, "session-store-timeout", redisstore.DefaultTimeout, "bound on each call to the Redis session store; past it, rules needing session state follow their on_error")
	fs.DurationVar(&o.storePendingTTL, "session-store-pending-ttl", redisstore.DefaultPendingTTL, "how long the commit of an occurrence with events to publish holds its session for other replicas, so that a correction (the event stream refused an event) replaces its changes before any other replica reads them; their reads of the session wait meanwhile, and a correction later than that is refused and the committed changes stand (counted in oar_engine_session_store_corrections_too_late_total: raise it if that rises). Whole milliseconds, below --session-store-timeout, which bounds the correction's own call; every replica sharing the store should have the same")
	fs.IntVar(&o.storeCache, "session-store-cache", redisstore.DefaultCacheSessions, "sessions whose last known state this replica keeps, so that an occurrence of a session that stays on it costs one round trip (its commit, which checks the version) instead of two; 0 keeps none")
	fs.IntVar(&o.storeRetries, "session-store-retries", sidecar.DefaultSessionRetries, "times an occurrence is read and evaluated again when another replica changed its session meanwhile; past them, its rules needing session state follow their on_error")
	fs.Int64Var(&o.maxBodyBytes, "max-body-bytes", sidecar.DefaultMaxBodyBytes, "largest POST /v1/evaluate body, in `bytes`, at most 64 MiB")
	fs.Int64Var(&o.maxRequestBytes, "max-request-bytes", sidecar.DefaultMaxRequestBytes, "most `bytes` of heap the POST /v1/evaluate requests being evaluated take together, each charged what its body decodes to (up to about 50 times its length); more waits its turn, and one charged more than this is served alone")
	fs.IntVar(&o.eventBuffer, "event-buffer", events.DefaultBuffer, "records buffered per /v1/events subscriber before a slow one is dropped")
	fs.StringVar(&o.decisionLog, "decision-log", "", "write one JSON line per evaluated occurrence (its facts, tool call, recent activity, decision, traced rules and bundle digest) to stdout, next to the publish_event records, or append them to a `FILE`; empty: no decision log. oarctl replay reads it")
	content := fs.String("decision-log-content", string(decisionlog.ContentOmit), "how much of an occurrence's content a decision log line keeps: omit (its length only), hash (its length and SHA-256, which can confirm a guessed text) or full (the text; needed to replay content rules and transforms)")
	fs.Float64Var(&o.decisionLogSample, "decision-log-sample", 1, "fraction of sessions whose occurrences are logged, 0 to 1; chosen by a hash of the session_id, so a session is logged whole or not at all, on every replica")
	fs.IntVar(&o.decisionLogBuffer, "decision-log-buffer", decisionlog.DefaultBuffer, "decision log lines held for a slow destination, their occurrences taking at most --max-request-bytes of heap; past either, lines are dropped (counted in oar_engine_decision_log_dropped_total), never an evaluation delayed")
	fs.DurationVar(&o.shutdown, "shutdown-timeout", sidecar.DefaultShutdownTimeout, "how long to let in-flight requests finish after SIGTERM")
	level := fs.String("log-level", "info", "`level` of the JSON logs on stderr: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "capability", "rules", "config":
			o.standalone = true
		case "bundle-dir":
			o.bundleDirSet = true
		}
	})
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q; oar-engine takes flags only", fs.Arg(0))
	}
	mode, err := decisionlog.ParseContentMode(*content)
	if err != nil {
		return o, fmt.Errorf("--decision-log-content: %w", err)
	}
	o.decisionLogContent = mode
	if err := o.logLevel.UnmarshalText([]byte(*level)); err != nil {
		return o, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", *level)
	}
	return o, o.check()
}

// check refuses values that cannot work.
func (o options) check() error {
	var errs []string
	if o.port < 0 || o.port > 65535 {
		errs = append(errs, fmt.Sprintf("--port %d is not a TCP port", o.port))
	}
	switch {
	case o.standalone && o.bundleDirSet:
		errs = append(errs, "--bundle-dir and --capability/--rules/--config are exclusive: serve a bundle directory or plain documents")
	case o.standalone && (o.documents.Capability == "" || len(o.documents.Rules) == 0):
		errs = append(errs, "standalone mode needs --capability and at least one --rules")
	case !o.standalone && o.bundleDir == "":
		errs = append(errs, "--bundle-dir is required")
	}
	positive := []struct {
		name string
		ok   bool
	}{
		{"--reload-interval", o.reloadInterval > 0},
		{"--max-sessions", o.maxSessions > 0},
		{"--max-counters-per-session", o.maxCounters > 0},
		{"--max-counters", o.maxTotal > 0},
		{"--max-session-bytes", o.maxBytes > 0},
		{"--max-body-bytes", o.maxBodyBytes > 0},
		{"--max-request-bytes", o.maxRequestBytes > 0},
		{"--event-buffer", o.eventBuffer > 0},
		{"--decision-log-buffer", o.decisionLogBuffer > 0},
		{"--shutdown-timeout", o.shutdown > 0},
		{"--session-store-timeout", o.storeTimeout > 0},
		{"--session-store-retries", o.storeRetries > 0},
	}
	for _, p := range positive {
		if !p.ok {
			errs = append(errs, p.name+" must be positive")
		}
	}
	if o.maxBodyBytes > decisionlog.MaxLineBytes {
		// A body holds at most as many code points as bytes, and a decision line records
		// its content's length, which the log's reader bounds by a line's size.
		errs = append(errs, fmt.Sprintf("--max-body-bytes %d is more than the %d an occurrence may have", o.maxBodyBytes, decisionlog.MaxLineBytes))
	}
	if o.sessionStore != "memory" && !strings.HasPrefix(o.sessionStore, "redis://") && !strings.HasPrefix(o.sessionStore, "rediss://") {
		errs = append(errs, fmt.Sprintf("--session-store %q is neither memory nor a redis:// or rediss:// URL", o.sessionStore))
	}
	if !(o.decisionLogSample >= 0 && o.decisionLogSample <= 1) {
		errs = append(errs, fmt.Sprintf("--decision-log-sample %v is not a fraction from 0 to 1", o.decisionLogSample))
	}
	// Only a Redis store holds sessions pending: in memory the pending time does nothing,
	// and a pod whose timeout is below its default still starts.
	if o.sessionStore != "memory" && o.storeTimeout > 0 {
		if err := redisstore.CheckPendingTTL(o.storePendingTTL, o.storeTimeout, "--session-store-timeout"); err != nil {
			msg := err.Error()
			if o.storePendingTTL == redisstore.DefaultPendingTTL {
				value := o.storePendingTTL.String()
				msg = value + " (the default; lower it with --session-store-pending-ttl)" + strings.TrimPrefix(msg, value)
			}
			errs = append(errs, "--session-store-pending-ttl "+msg)
		}
	}
	if o.storeCache < 0 {
		errs = append(errs, "--session-store-cache must not be negative")
	}
	if o.sessionIdleTTL < 0 {
		errs = append(errs, "--session-idle-ttl must not be negative")
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// sharedStore returns the Redis session store --session-store names, or nil for memory.
func (o options) sharedStore() (*redisstore.Store, error) {
	if o.sessionStore == "memory" {
		return nil, nil
	}
	return redisstore.New(redisstore.Options{URL: o.sessionStore, PasswordFile: o.storePassword, CAFile: o.storeCA,
		Prefix: o.storePrefix, IdleTTL: o.sessionIdleTTL, Timeout: o.storeTimeout, PendingTTL: o.storePendingTTL,
		MaxCounters: o.maxCounters, CacheSessions: o.storeCache, CacheBytes: o.maxBytes})
}

// openDecisionLog starts the decision log --decision-log asks for, writing to stdout or
// appending to a file; nil when there is none. The caller closes it and the file.
func (o options) openDecisionLog(stdout io.Writer, log logr.Logger) (*decisionlog.Writer, io.Closer, error) {
	if o.decisionLog == "" {
		return nil, nil, nil
	}
	w, closer := stdout, io.Closer(nil)
	if o.decisionLog != "stdout" {
		f, err := os.OpenFile(o.decisionLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, nil, err
		}
		w, closer = f, f
	}
	log = log.WithName("decision-log")
	return decisionlog.NewWriter(w, decisionlog.Options{
		Content: o.decisionLogContent, Sample: o.decisionLogSample, Buffer: o.decisionLogBuffer, BufferBytes: o.maxRequestBytes,
		OnWriteError: func(err error, failures uint64) {
			log.Error(err, "a decision log line could not be written; the evaluation was answered", "failures", failures)
		},
	}), closer, nil
}

func (o options) sidecarOptions(events io.Writer, log logr.Logger, shared *redisstore.Store, decisions *decisionlog.Writer) sidecar.Options {
	bundleDir, documents := o.bundleDir, (*standalone.Files)(nil)
	if o.standalone {
		bundleDir, documents = "", &o.documents
	}
	return sidecar.Options{
		BundleDir:       bundleDir,
		Documents:       documents,
		ReloadInterval:  o.reloadInterval,
		MaxBodyBytes:    o.maxBodyBytes,
		MaxRequestBytes: o.maxRequestBytes,
		Sessions:        session.Options{MaxSessions: o.maxSessions, IdleTTL: o.sessionIdleTTL, MaxCounters: o.maxCounters, MaxTotalCounters: o.maxTotal, MaxBytes: o.maxBytes},
		SharedSessions:  shared,
		SessionRetries:  o.storeRetries,
		Events:          events,
		EventBuffer:     o.eventBuffer,
		DecisionLog:     decisions,
		ShutdownTimeout: o.shutdown,
		Log:             log,
	}
}
