package engine

import (
	"sync"
)

// CounterKey identifies one counter: the declaring rule's qualified identifier, the
// session, and the rule's counter-scope value when it declares counter_scope
// ([OAR-FIRE-5], [OAR-FIRE-10]). Scoped distinguishes an empty scope value from no scope.
type CounterKey struct {
	Rule    string
	Session string
	Scope   string
	Scoped  bool
}

// ReportKey is the spelling of [OAR-CONF-33]: the qualified id, plus "#<scope>" for a
// scoped counter.
func (k CounterKey) ReportKey() string {
	if k.Scoped {
		return k.Rule + "#" + k.Scope
	}
	return k.Rule
}

// Counts are the two counters a rule owns ([OAR-FIRE-3]).
type Counts struct {
	Fire    int64 `json:"fire_count"`
	Breaker int64 `json:"breaker_count"`
}

// CounterStore keeps counters. An error from either method is a side-effect that cannot
// be applied, which the engine routes to the rule's on_error ([OAR-FIRE-9]).
type CounterStore interface {
	Get(k CounterKey) (Counts, error)
	// Apply performs one counter action and returns the counts after it.
	Apply(k CounterKey, a Action) (Counts, error)
	// Restore sets k back to c, the counts it held before the occurrence: the engine
	// takes back the counter actions of a rule whose later side-effect failed, since a
	// rule that cannot be evaluated contributes no side-effect ([OAR-OPS-4]). A session's
	// occurrences are evaluated one at a time (the sidecar holds a lock per session), so
	// nothing else wrote k in between.
	Restore(k CounterKey, c Counts) error
}

// EventSink receives publish_event records ([OAR-FIRE-7]). An error is a refused write
// ([OAR-FIRE-9]).
type EventSink interface {
	Publish(e Event) error
}

// Event is one publish_event record.
type Event struct {
	Rule    string `json:"rule"`
	Anchor  string `json:"anchor"`
	Effect  string `json:"effect"`
	Session string `json:"session_id,omitempty"`
}

// ActivityStore keeps each session's recent activity window ([OAR-PROF-9]).
type ActivityStore interface {
	// Window returns the session's steps, oldest first. The caller must not modify it.
	Window(session string) []string
	// Append adds a step, keeping at most max steps.
	Append(session, step string, max int)
}

// FallibleActivity is an ActivityStore whose windows can be unreadable, as a remote
// store's are while it is unreachable. The engine calls WindowErr instead of Window, and
// a rule carrying flow cannot be evaluated when it fails ([OAR-OPS-3]); rules without
// flow are unaffected.
type FallibleActivity interface {
	ActivityStore
	WindowErr(session string) ([]string, error)
}

// MemoryCounters is an unbounded in-memory CounterStore. Counters are held per
// session, so the counters one occurrence reads are in one small table rather than
// spread over a table of every session's.
type MemoryCounters struct {
	mu sync.Mutex
	m  map[string]map[sessionCounter]Counts
}

// sessionCounter keys a counter within its session.
type sessionCounter struct {
	rule, scope string
	scoped      bool
}

// NewMemoryCounters returns an empty store.
func NewMemoryCounters() *MemoryCounters {
	return &MemoryCounters{m: map[string]map[sessionCounter]Counts{}}
}

// Get implements CounterStore.
func (s *MemoryCounters) Get(k CounterKey) (Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k.Session][sessionCounter{k.Rule, k.Scope, k.Scoped}], nil
}

// Apply implements CounterStore.
func (s *MemoryCounters) Apply(k CounterKey, a Action) (Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	counters := s.m[k.Session]
	if counters == nil {
		counters = map[sessionCounter]Counts{}
		s.m[k.Session] = counters
	}
	key := sessionCounter{k.Rule, k.Scope, k.Scoped}
	c := counters[key].After(a)
	counters[key] = c
	return c, nil
}

// Restore implements CounterStore.
func (s *MemoryCounters) Restore(k CounterKey, c Counts) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if counters := s.m[k.Session]; counters != nil {
		counters[sessionCounter{k.Rule, k.Scope, k.Scoped}] = c
	}
	return nil
}

// After is c once action a is applied ([OAR-FIRE-3], [OAR-FIRE-4]): increments add one,
// resets set zero, each bound to its own counter. Every CounterStore applies actions
// through it, so the stores cannot disagree on what an action does.
func (c Counts) After(a Action) Counts {
	switch a {
	case ActionIncrementCounter:
		c.Fire++
	case ActionResetCounter:
		c.Fire = 0
	case ActionIncrementBreaker:
		c.Breaker++
	case ActionResetBreaker:
		c.Breaker = 0
	}
	return c
}

// MemoryActivity is an in-memory ActivityStore.
type MemoryActivity struct {
	mu sync.Mutex
	m  map[string][]string
}

// NewMemoryActivity returns an empty store.
func NewMemoryActivity() *MemoryActivity { return &MemoryActivity{m: map[string][]string{}} }

// Window implements ActivityStore.
func (s *MemoryActivity) Window(session string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[session]
}

// Append implements ActivityStore. A window handed out earlier never changes under its
// reader: the step is written past the end of every window handed out so far, into
// spare capacity, and the oldest step is dropped by moving the start forward. Only when
// the capacity runs out is the window copied, into room for max more steps, so a
// session's appends allocate about once per max steps.
func (s *MemoryActivity) Append(session, step string, max int) {
	if max <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.m[session]
	if len(old) >= max {
		old = old[len(old)-max+1:]
	}
	if len(old) == cap(old) {
		w := make([]string, len(old), len(old)+max)
		copy(w, old)
		old = w
	}
	s.m[session] = append(old, step)
}

// EventLog is an EventSink that keeps every record in memory.
type EventLog struct {
	mu     sync.Mutex
	Events []Event
}

// Publish implements EventSink.
func (l *EventLog) Publish(e Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Events = append(l.Events, e)
	return nil
}
