// Package metrics is the engine sidecar's Prometheus instrumentation, served on
// /metrics: evaluations by anchor and decision and their latency,
// requests refused before evaluation, bundle reloads and refused bundles (counted, and
// whether the mounted one stands refused), the served bundle's digest as an info metric,
// occurrences at anchors the served capability does not declare (by anchor, bounded), the
// sessions held and evicted, the event stream's subscribers, the decision log's lines
// written, dropped and refused, and the Go runtime and process collectors (resident
// memory included). Every series lives in the sidecar's own registry, so several sidecars
// in one process (tests) never collide.
package metrics

import (
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
)

const namespace = "oar_engine"

// Reasons a request is refused before evaluation, the values of the reason label.
const (
	RejectMalformed = "malformed"
	RejectTooLarge  = "too_large"
	RejectNotReady  = "not_ready"
)

// Undeclared anchors come from requests, not from the served capability, so their
// label values are bounded: the first MaxUndeclaredAnchors distinct anchors (each cut
// to maxAnchorLabel bytes) get their own series, any later one counts under
// OtherUndeclaredAnchor, and evaluations_total counts all of them under
// UndeclaredAnchorLabel.
const (
	MaxUndeclaredAnchors  = 32
	OtherUndeclaredAnchor = "_other"
	UndeclaredAnchorLabel = "_undeclared"
	maxAnchorLabel        = 64
)

// Sources read the gauges other components own.
type Sources struct {
	// Sessions returns the sessions held, and SessionBytes what they (or the cache of
	// sessions shared in Redis) are charged against --max-session-bytes.
	Sessions     func() int
	SessionBytes func() int
	// RequestBytes returns the heap the requests being evaluated are charged
	// against --max-request-bytes, and RequestsWaited how many requests waited for
	// room under it.
	RequestBytes   func() int64
	RequestsWaited func() uint64
	// Evictions returns the sessions forgotten because a bound needed room and
	// because they were idle.
	Evictions func() (lru, ttl uint64)
	// Subscribers returns the current /v1/events subscribers; Dropped those dropped
	// for falling behind.
	Subscribers func() int
	Dropped     func() uint64
	// BundleRefused reports whether the mounted bundle was refused and no bundle loaded
	// or mounted since has superseded it (reload.Status.Refused).
	BundleRefused func() bool
	// DecisionLog returns the decision log's lines written, dropped because its
	// buffer was full, and refused by its destination, and the occurrences written as
	// a too_long marker; nil when there is no log.
	DecisionLog func() (written, dropped, failed, tooLong uint64)
}

// Metrics is the sidecar's instrumentation. It implements reload.Observer.
type Metrics struct {
	registry       *prometheus.Registry
	evaluations    *prometheus.CounterVec
	latency        prometheus.Histogram
	rejected       *prometheus.CounterVec
	reloads        prometheus.Counter
	reloadFailures prometheus.Counter
	info           *prometheus.GaugeVec
	rules          prometheus.Gauge
	lastReload     prometheus.Gauge
	undeclared     *prometheus.CounterVec

	// undeclaredSeen holds the undeclared anchors that have their own series.
	undeclaredSeen map[string]bool
	undeclaredMu   sync.Mutex

	// The shared session store's round trips, failures, conflicts, retries,
	// occurrences given up on under contention, loads that waited for another replica's
	// pending marker and corrections refused as too late.
	storeLatency      *prometheus.HistogramVec
	storeFailures     *prometheus.CounterVec
	storeConflicts    prometheus.Counter
	storeRetries      prometheus.Counter
	storeContended    prometheus.Counter
	storePendingWaits prometheus.Counter
	storeTooLate      prometheus.Counter

	// counted holds the evaluations child of every (anchor, decision) seen, copied on
	// write, so a request reads it without hashing its labels or taking the vector's
	// lock. Anchors are those of served capabilities, so it stays small; evaluations is
	// never reset, so a child stays valid.
	counted   atomic.Pointer[map[evaluationKey]prometheus.Counter]
	countedMu sync.Mutex
}

type evaluationKey struct{ anchor, decision string }

var _ reload.Observer = (*Metrics)(nil)

// New registers every metric in a new registry.
func New(src Sources) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "evaluations_total",
			Help: "Occurrences evaluated, by host-local anchor and decision.",
		}, []string{"anchor", "decision"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "evaluation_duration_seconds",
			Help:    "Time to answer POST /v1/evaluate, from reading the body to writing the decision.",
			Buckets: prometheus.ExponentialBuckets(10e-6, 2, 15),
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "requests_rejected_total",
			Help: "POST /v1/evaluate requests refused before evaluation, by reason.",
		}, []string{"reason"}),
		reloads: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "bundle_reloads_total",
			Help: "Bundles loaded and swapped in, the first included.",
		}),
		reloadFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "bundle_reload_failures_total",
			Help: "Bundles refused because they could not be read or loaded; the previous bundle kept serving.",
		}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bundle_info",
			Help: "The served bundle: 1 for its digest and capability host.",
		}, []string{"digest", "host"}),
		rules: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bundle_rules",
			Help: "Rules in the served bundle.",
		}),
		lastReload: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "bundle_last_reload_timestamp_seconds",
			Help: "When the served bundle was swapped in, in seconds since the epoch.",
		}),
		undeclared: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "undeclared_anchor_occurrences_total",
			Help: "Occurrences at an anchor the served capability does not declare (answered, selecting no rule), by anchor; at most 32 anchors, later ones as _other.",
		}, []string{"anchor"}),
		undeclaredSeen: map[string]bool{},
	}
	m.storeLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "session_store_duration_seconds",
		Help:    "Round trips to the shared session store, by operation: load (read a session) or commit (write an occurrence's changes).",
		Buckets: prometheus.ExponentialBuckets(25e-6, 2, 14),
	}, []string{"op"})
	m.storeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "session_store_failures_total",
		Help: "Calls to the shared session store that failed, by operation and cause: unreachable, timeout, refusing (an error reply), unusable (its server's version refused) or unreadable_state (a session's hash holds what no replica of this version wrote); the occurrence's rules needing session state went to their on_error.",
	}, []string{"op", "cause"})
	m.storeConflicts = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "session_store_conflicts_total",
		Help: "Commits refused because another replica changed the session since it was read.",
	})
	m.storeRetries = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "session_store_retries_total",
		Help: "Occurrences read and evaluated again after a conflict.",
	})
	m.storeContended = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "session_store_contention_exhausted_total",
		Help: "Occurrences whose session stayed contended past the retry bound; their rules needing session state went to their on_error.",
	})
	m.storePendingWaits = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "session_store_pending_waits_total",
		Help: "Session reads that found the session held pending another replica's correction (a commit with events to publish, for --session-store-pending-ttl) and waited for it.",
	})
	m.storeTooLate = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "session_store_corrections_too_late_total",
		Help: "Corrections of a commit whose event the stream refused that came after the session's pending time (--session-store-pending-ttl) had passed, so the committed changes stood and the failures say so; steadily rising, the pending time is too short.",
	})
	m.counted.Store(&map[evaluationKey]prometheus.Counter{})
	m.registry.MustRegister(m.evaluations, m.latency, m.rejected, m.reloads, m.reloadFailures,
		m.info, m.rules, m.lastReload, m.undeclared,
		m.storeLatency, m.storeFailures, m.storeConflicts, m.storeRetries, m.storeContended,
		m.storePendingWaits, m.storeTooLate,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registerSources(src)
	return m
}

func (m *Metrics) registerSources(src Sources) {
	gauge := func(name, help string, f func() float64) {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, f))
	}
	counter := func(name, help string, labels prometheus.Labels, f func() float64) {
		m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: labels}, f))
	}
	if src.Sessions != nil {
		gauge("sessions", "Sessions whose counters and activity window are held in memory, or whose state this replica caches of sessions shared in Redis.", func() float64 { return float64(src.Sessions()) })
	}
	if src.SessionBytes != nil {
		gauge("session_bytes", "Bytes of heap the sessions held in memory, or this replica's cache of sessions shared in Redis, are charged against --max-session-bytes, their ids, counter scope values and activity steps included; the heap they take stays within twice it.",
			func() float64 { return float64(src.SessionBytes()) })
	}
	if src.RequestBytes != nil {
		gauge("request_bytes", "Bytes of heap the POST /v1/evaluate requests being evaluated are charged against --max-request-bytes (what their bodies decode to, at most about 50 times their length).",
			func() float64 { return float64(src.RequestBytes()) })
	}
	if src.RequestsWaited != nil {
		counter("requests_waited_total", "POST /v1/evaluate requests that waited for room under --max-request-bytes before being read or evaluated; steadily rising, raise it with the memory limit.", nil,
			func() float64 { return float64(src.RequestsWaited()) })
	}
	if src.Evictions != nil {
		const help = "Sessions forgotten, by reason: lru (a bound needed room: --max-sessions, --max-counters or --max-session-bytes) or ttl (idle too long)."
		counter("session_evictions_total", help, prometheus.Labels{"reason": "lru"}, func() float64 { lru, _ := src.Evictions(); return float64(lru) })
		counter("session_evictions_total", help, prometheus.Labels{"reason": "ttl"}, func() float64 { _, ttl := src.Evictions(); return float64(ttl) })
	}
	if src.BundleRefused != nil {
		gauge("bundle_refused", "1 while the mounted bundle is one the sidecar refused and no bundle mounted since is served (the previous bundle keeps serving; GET /v1/bundle says why), else 0.",
			func() float64 { return boolValue(src.BundleRefused()) })
	}
	if src.Subscribers != nil {
		gauge("event_subscribers", "Current GET /v1/events subscribers.", func() float64 { return float64(src.Subscribers()) })
	}
	if src.Dropped != nil {
		counter("event_subscribers_dropped_total", "GET /v1/events subscribers dropped for falling behind.", nil, func() float64 { return float64(src.Dropped()) })
	}
	if src.DecisionLog != nil {
		counter("decision_log_lines_total", "Decision log lines written.", nil, func() float64 { n, _, _, _ := src.DecisionLog(); return float64(n) })
		counter("decision_log_dropped_total", "Decision log lines dropped, never written, because the log's buffer was full (its destination is too slow); the evaluations were answered.", nil, func() float64 { _, n, _, _ := src.DecisionLog(); return float64(n) })
		counter("decision_log_write_failures_total", "Decision log lines its destination refused; the evaluations were answered.", nil, func() float64 { _, _, n, _ := src.DecisionLog(); return float64(n) })
		counter("decision_log_too_long_total", "Occurrences logged as a too_long marker instead of their line, which was longer than a line may hold (64 MiB); the evaluations were answered.", nil, func() float64 { _, _, _, n := src.DecisionLog(); return float64(n) })
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Evaluated records one answered occurrence.
func (m *Metrics) Evaluated(anchor, decision string, took time.Duration) {
	m.evaluated(anchor, decision).Inc()
	m.latency.Observe(took.Seconds())
}

func (m *Metrics) evaluated(anchor, decision string) prometheus.Counter {
	k := evaluationKey{anchor, decision}
	if c, ok := (*m.counted.Load())[k]; ok {
		return c
	}
	m.countedMu.Lock()
	defer m.countedMu.Unlock()
	old := *m.counted.Load()
	if c, ok := old[k]; ok {
		return c
	}
	next := maps.Clone(old)
	// A label value must be UTF-8; a local anchor may hold a surrogate ([OAR-FACT-23]).
	next[k] = m.evaluations.WithLabelValues(strings.ToValidUTF8(anchor, "\uFFFD"), decision)
	m.counted.Store(&next)
	return next[k]
}

// UndeclaredAnchor records an occurrence at an anchor the served capability does not
// declare, under a bounded set of label values.
func (m *Metrics) UndeclaredAnchor(anchor string) {
	label := strings.ToValidUTF8(anchor, "\uFFFD")
	if len(label) > maxAnchorLabel {
		cut := maxAnchorLabel
		for cut > 0 && !utf8.RuneStart(label[cut]) {
			cut--
		}
		label = label[:cut]
	}
	m.undeclaredMu.Lock()
	if !m.undeclaredSeen[label] {
		if len(m.undeclaredSeen) >= MaxUndeclaredAnchors {
			label = OtherUndeclaredAnchor
		} else {
			m.undeclaredSeen[label] = true
		}
	}
	m.undeclaredMu.Unlock()
	m.undeclared.WithLabelValues(label).Inc()
}

// RoundTrip records one call to the shared session store (redisstore.Observer).
func (m *Metrics) RoundTrip(op string, took time.Duration, err error) {
	m.storeLatency.WithLabelValues(op).Observe(took.Seconds())
	if err != nil {
		m.storeFailures.WithLabelValues(op, string(redisstore.CauseOf(err))).Inc()
	}
}

// FailedFast records a call to the shared session store that failed without a round
// trip, its server's version refused (redisstore.Observer): a failure, and no latency.
func (m *Metrics) FailedFast(op string, err error) {
	m.storeFailures.WithLabelValues(op, string(redisstore.CauseOf(err))).Inc()
}

// Conflict records a commit another replica's change refused (redisstore.Observer).
func (m *Metrics) Conflict() { m.storeConflicts.Inc() }

// PendingWait records a session read that waited for another replica's pending marker
// (redisstore.Observer).
func (m *Metrics) PendingWait() { m.storePendingWaits.Inc() }

// CorrectionTooLate records a correction refused because the session's pending time
// had passed (redisstore.Observer).
func (m *Metrics) CorrectionTooLate() { m.storeTooLate.Inc() }

// SessionRetried records an occurrence evaluated again after a conflict.
func (m *Metrics) SessionRetried() { m.storeRetries.Inc() }

// SessionContended records an occurrence given up on past the retry bound.
func (m *Metrics) SessionContended() { m.storeContended.Inc() }

// Rejected records a request refused before evaluation.
func (m *Metrics) Rejected(reason string) { m.rejected.WithLabelValues(reason).Inc() }

// Reloaded implements reload.Observer.
func (m *Metrics) Reloaded(s *reload.Served) {
	m.reloads.Inc()
	m.info.Reset()
	m.info.WithLabelValues(s.Digest(), s.Loaded.Capability.Host).Set(1)
	m.rules.Set(float64(len(s.Loaded.RuleSet.Rules)))
	m.lastReload.Set(float64(s.LoadedAt.UnixNano()) / float64(time.Second))
}

// ReloadFailed implements reload.Observer.
func (m *Metrics) ReloadFailed(error) { m.reloadFailures.Inc() }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// Registry returns the registry, for tests that read a value.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }
