// Package sidecar is the engine sidecar's HTTP API: it runs next to an agent host, serves
// the bundle its Capability published, and answers "what does this occurrence resolve
// to?" over localhost.
//
//	POST /v1/evaluate   one occurrence → the decision in the shapes of section 10.2
//	                    ([OAR-CONF-21]) plus the digest of the bundle that answered
//	GET  /v1/bundle     digest, packs with generations and rule ids, reload status
//	GET  /v1/capability the served capability document (section 8.2)
//	GET  /v1/events     publish_event records as server-sent events ([OAR-FIRE-7])
//	GET  /v1/openapi.json the OpenAPI 3.1 document of these four (package openapi)
//	GET  /healthz       the process is alive
//	GET  /readyz        a bundle is loaded
//	GET  /metrics       Prometheus
//
// Each request takes the served bundle once (reload.Source.Current), so its answer comes
// wholly from one bundle. Session state lives in a session.Store every bundle shares, so
// counters and activity windows ([OAR-PROF-9]) survive reloads. A malformed request gets
// a 400 whose JSON names the field and the clause (occurrence.Decode); a fact of the
// wrong type is not malformed: the engine treats it as a fact-provider failure and the
// rule's on_error decides ([OAR-FACT-26], [OAR-OPS-3]).
//
// With Options.DecisionLog set, every evaluated occurrence is also handed to the
// decision log (internal/decisionlog), under its session's lock so the log has a
// session's occurrences in the order they took effect; the log samples and writes it
// in the background without ever delaying the answer.
//
// The sub-packages hold one concern each: session (counters and activity, bounded),
// events (the publish_event stream), reload (the served bundle and the directory
// watcher), metrics (Prometheus) and kubeletdir (a kubelet-style volume for tests).
package sidecar

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/events"
	"github.com/oar-operator/oar-operator/internal/sidecar/metrics"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
	"github.com/oar-operator/oar-operator/internal/sidecar/session"
	"github.com/oar-operator/oar-operator/internal/sidecar/standalone"
)

// Defaults for Options' zero fields.
const (
	DefaultMaxBodyBytes    = 1 << 20
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultMaxRequestBytes is what the injector gives a sidecar at its default memory
	// limit: an eighth of 128 MiB.
	DefaultMaxRequestBytes = 16 << 20
	// MaxSessionIDBytes bounds a session_id: the session table holds one per session.
	MaxSessionIDBytes = 1024
	// DefaultStreamWriteTimeout is shorter than DefaultShutdownTimeout, so a stalled
	// event-stream client cannot hold shutdown up.
	DefaultStreamWriteTimeout = 5 * time.Second
	// DefaultBodyReadTimeout bounds how long a POST /v1/evaluate body may take to
	// arrive once it has room (requestBudget): on loopback a whole body takes
	// milliseconds, and a client that stalls mid-body must not hold room that other
	// requests wait for.
	DefaultBodyReadTimeout = 10 * time.Second
)

// Options configure a Sidecar.
type Options struct {
	// BundleDir is the mounted bundle ConfigMap; Run watches it. Empty: bundles are
	// installed through Source().Install only.
	BundleDir string
	// Documents, when set instead of BundleDir, are plain OAR documents Run watches
	// (standalone mode).
	Documents *standalone.Files
	// ReloadInterval is how often BundleDir or Documents are polled
	// (reload.DefaultInterval).
	ReloadInterval time.Duration
	// MaxBodyBytes bounds a POST /v1/evaluate body.
	MaxBodyBytes int64
	// MaxRequestBytes bounds the heap the requests being evaluated take together
	// (requestBudget; DefaultMaxRequestBytes).
	MaxRequestBytes int64
	// Sessions bound the in-memory session table.
	Sessions session.Options
	// SharedSessions, when set, keeps sessions in Redis instead, shared by every
	// replica (shared.go); SessionRetries bounds the re-evaluations of an occurrence
	// whose session another replica changed meanwhile (DefaultSessionRetries).
	SharedSessions *redisstore.Store
	SessionRetries int
	// Events receives publish_event records as JSON lines (the process's stdout);
	// EventBuffer is each /v1/events subscriber's buffer, in records.
	Events      io.Writer
	EventBuffer int
	// DecisionLog, when set, is told of every evaluated occurrence (it samples and
	// writes in the background; the caller closes it after Run).
	DecisionLog *decisionlog.Writer
	// StreamWriteTimeout bounds each write to a /v1/events client: one that stops
	// reading is disconnected after it, rather than holding its connection, a
	// goroutine and its buffered records until it goes away.
	StreamWriteTimeout time.Duration
	// BodyReadTimeout bounds reading one request's body (DefaultBodyReadTimeout).
	BodyReadTimeout time.Duration
	// ShutdownTimeout bounds how long Run waits for in-flight requests.
	ShutdownTimeout time.Duration
	Log             logr.Logger
}

// Sidecar is one engine sidecar: its served bundle, its sessions, its event stream
// and its metrics.
type Sidecar struct {
	opt      Options
	source   *reload.Source
	sessions *session.Store
	events   *events.Stream
	metrics  *metrics.Metrics
	// digest caches the served bundle's digest header value (evaluate.go).
	digest atomic.Pointer[servedDigest]
	// sessionLocks serialise the evaluations of one session (evaluate.go).
	sessionLocks sessionLocks
	// requests bounds the heap the requests being evaluated take (evaluate.go).
	requests *requestBudget
}

// New returns a sidecar serving no bundle yet.
func New(opt Options) *Sidecar {
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opt.MaxRequestBytes <= 0 {
		opt.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opt.ShutdownTimeout <= 0 {
		opt.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opt.BodyReadTimeout <= 0 {
		opt.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if opt.StreamWriteTimeout <= 0 {
		opt.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if opt.Events == nil {
		opt.Events = io.Discard
	}
	if opt.SessionRetries <= 0 {
		opt.SessionRetries = DefaultSessionRetries
	}
	s := &Sidecar{
		opt:      opt,
		sessions: session.New(opt.Sessions),
		events:   events.NewStream(opt.Events, opt.EventBuffer, 0),
		requests: newRequestBudget(opt.MaxRequestBytes),
	}
	src := metrics.Sources{
		Sessions:       s.sessions.Len,
		SessionBytes:   s.sessions.Bytes,
		RequestBytes:   s.requests.held.Load,
		RequestsWaited: s.requests.waited.Load,
		Evictions:      s.sessions.Evictions,
		Subscribers:    s.events.Subscribers,
		Dropped:        s.events.Dropped,
		BundleRefused:  func() bool { return s.source.Status().Refused() },
	}
	if shared := opt.SharedSessions; shared != nil {
		// The sessions are in Redis: what this replica holds of them is its cache.
		src.Sessions, src.SessionBytes = shared.CachedSessions, shared.CachedBytes
	}
	if dl := opt.DecisionLog; dl != nil {
		src.DecisionLog = func() (uint64, uint64, uint64, uint64) {
			return dl.Written(), dl.Dropped(), dl.WriteFailures(), dl.TooLong()
		}
	}
	s.metrics = metrics.New(src)
	detectors := engine.ReservedDetectors()
	if opt.SharedSessions != nil {
		opt.SharedSessions.SetObserver(s.metrics)
	}
	s.source = reload.NewSource(reload.Options{
		Runtime: func(digest string) *engine.Runtime {
			if opt.SharedSessions != nil {
				// Occurrences that touch session state get a runtime of their own
				// (evaluateShared); the others need no store at all.
				return &engine.Runtime{Events: s.events.Sink(digest), Detectors: detectors}
			}
			return &engine.Runtime{Counters: s.sessions, Activity: s.sessions, Events: s.events.Sink(digest), Detectors: detectors}
		},
		Observer: s.metrics,
		Log:      opt.Log.WithName("reload"),
	})
	return s
}

// Source returns the served bundle's holder.
func (s *Sidecar) Source() *reload.Source { return s.source }

// Metrics returns the sidecar's instrumentation.
func (s *Sidecar) Metrics() *metrics.Metrics { return s.metrics }

// Handler serves the whole API; it is bound to the loopback address. A request for
// /v1/evaluate spelled as its pattern, nearly all of them, goes straight to its
// handler, skipping the mux's search (a twenty-fifth of a request), which would find
// the same handler.
func (s *Sidecar) Handler() http.Handler {
	mux, evaluate := s.routes()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/evaluate" && r.URL.RawPath == "" {
			evaluate.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// routes returns the mux of the whole API and its /v1/evaluate handler.
func (s *Sidecar) routes() (*http.ServeMux, http.Handler) {
	mux := http.NewServeMux()
	evaluate := only(http.MethodPost, s.evaluate)
	mux.Handle("/v1/evaluate", evaluate)
	mux.Handle("/v1/bundle", only(http.MethodGet, s.bundleInfo))
	mux.Handle("/v1/capability", only(http.MethodGet, s.capability))
	mux.Handle("/v1/events", only(http.MethodGet, s.eventStream))
	mux.Handle("/v1/openapi.json", only(http.MethodGet, openAPIDocument))
	s.probes(mux)
	mux.HandleFunc("/", notFound)
	return mux, evaluate
}

// ProbeHandler serves /healthz, /readyz and /metrics only: the kubelet's probes and
// Prometheus reach the pod's IP, never its loopback, and need nothing else.
func (s *Sidecar) ProbeHandler() http.Handler {
	mux := http.NewServeMux()
	s.probes(mux)
	mux.HandleFunc("/", notFound)
	return mux
}

func (s *Sidecar) probes(mux *http.ServeMux) {
	mux.Handle("/healthz", only(http.MethodGet, healthz))
	mux.Handle("/readyz", only(http.MethodGet, s.readyz))
	mux.Handle("/metrics", only(http.MethodGet, s.metrics.Handler().ServeHTTP))
}
