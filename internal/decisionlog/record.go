// Package decisionlog is the engine sidecar's decision log (issue 17): one JSON line per
// evaluated occurrence, holding the occurrence as the host sent it, the decision, the
// rules the engine traced and the digest of the bundle that answered, so `oarctl replay`
// can evaluate the same occurrences again under another rule set.
//
// The sidecar writes it through a Writer, which never blocks or fails an evaluation: a
// bounded buffer feeds a background goroutine, and a line that does not fit is dropped
// and counted. An occurrence whose line would be longer than MaxLineBytes, which Read
// would not take, is written as a too_long marker Read reports. Read reads the lines
// back; it is what oarctl and the tests use. Lines
// are JSON objects whose "kind" is "decision", so they can share the sidecar's stdout
// with publish_event records, which Read skips.
//
// The sidecar logs a session's occurrences in the order they took effect (under the
// session's lock), and, when sessions are shared in Redis, each line carries the
// session's versions it read and left (SessionState), which order one session's lines
// across replicas whose clocks differ. A line answered without its session says how:
// session_unavailable when it changed nothing of the session, session_outcome_unknown
// when its changes were sent and may or may not have been applied.
//
// Content can be sensitive, so how much of it a line keeps is a choice (ContentMode):
// omit keeps its length only, hash adds its SHA-256, full keeps the text. The engine
// reads content only to transform it, so a line without the text still replays every
// decision (a placeholder of the same length takes its place); only the transformed
// text is lost. Sampling is
// per session (Sampled), deterministic across replicas and restarts, so a sampled
// session is logged whole and its counters and activity replay exactly.
package decisionlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

// Kind is the value of every decision line's "kind" member.
const Kind = "decision"

// ContentMode says how much of an occurrence's content a line keeps.
type ContentMode string

// The content modes.
const (
	// ContentOmit keeps the content's length only: nothing of the text, not even a
	// digest that would let a reader confirm a guessed secret.
	ContentOmit ContentMode = "omit"
	// ContentHash keeps the length and the SHA-256 of the text: enough to tell two
	// occurrences with the same content apart from different ones, or to check a
	// candidate text, never to read it.
	ContentHash ContentMode = "hash"
	// ContentFull keeps the text, so a replay reproduces transforms and content rules.
	ContentFull ContentMode = "full"
)

// ParseContentMode reads a --decision-log-content value.
func ParseContentMode(s string) (ContentMode, error) {
	switch m := ContentMode(s); m {
	case ContentOmit, ContentHash, ContentFull:
		return m, nil
	}
	return "", fmt.Errorf("%q is not one of omit, hash, full", s)
}

// Record is one line of the decision log.
type Record struct {
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
	// Bundle is the digest of the bundle that answered.
	Bundle  string `json:"bundle"`
	Session string `json:"session_id"`
	Anchor  string `json:"anchor"`
	// Occurrence is the occurrence as the host sent it, a POST /v1/evaluate body,
	// without its content unless the content mode is full.
	Occurrence Occurrence `json:"occurrence"`
	// Content describes the occurrence's content; nil when it carried none.
	Content *Content `json:"content,omitempty"`
	// Decision, Code and Rule are the answer's decision, code and deciding rule.
	Decision string `json:"decision"`
	Code     string `json:"code,omitempty"`
	Rule     string `json:"rule,omitempty"`
	// Fired are the rules that fired, in evaluation order; Applied is the engine's
	// whole trace (rule:fired, rule:passed, rule:errored, ...), what a replay compares.
	Fired   []string `json:"fired"`
	Applied []string `json:"applied"`
	// SessionBegan is set when the occurrence found its session holding no state in
	// the sidecar's store: the session was new, or the store had forgotten it (idle
	// past its TTL, evicted by the store's bounds, expired in Redis). It is read as the
	// evaluation begins, and the local store keeps a session it evaluates pinned until
	// the evaluation ends, so it cannot forget the session in the middle. A replay
	// starts the session's counters, breakers and activity window again there.
	SessionBegan bool `json:"session_began,omitempty"`
	// SessionState is the session's version in the shared store (Redis) as the
	// occurrence read it and as it left it; nil unless the occurrence was evaluated
	// against the shared store and its changes committed. It is what orders one
	// session's lines across replicas, whose clocks differ (see SessionState).
	SessionState *SessionState `json:"session_state,omitempty"`
	// SessionUnavailable is set when the occurrence needed its session's state and was
	// answered without it: the shared store could not be read or written, or the
	// session stayed contended past the retries. Every read and write of the state
	// failed, so each rule needing it took its on_error, and the occurrence changed
	// nothing of the session. A replay evaluates it so, leaving the session's state
	// as it was. Lines of older writers lack it; such an occurrence then replays
	// against the session's state.
	SessionUnavailable bool `json:"session_unavailable,omitempty"`
	// SessionOutcomeUnknown is set when the occurrence was evaluated against the shared
	// session and its commit was sent, but whether the commit was applied is unknown:
	// its answer was lost, and sending it again settled nothing. It holds the version
	// the occurrence read and the one the commit would have left. The occurrence was
	// answered without its session, as an unavailable one is, but its changes may be in
	// the session: a later line that read Written proves they are, one that committed
	// other changes to Read (not empty) proves they are not (a commit applies only at
	// the version it read, and versions never repeat). Read is empty only when the
	// session held no state, so the line then says SessionBegan too, and the reader
	// refuses a line without it. Lines of older writers say
	// session_unavailable instead. With SessionState, the occurrence was committed
	// (SessionState) and answered so, but the stream refused one of its events and
	// the correction of its changes has an unknown outcome: Read is the version the
	// commit left (SessionState.Written), Written the one the correction would have
	// left, and the session holds the commit's changes or the correction's.
	SessionOutcomeUnknown *SessionState `json:"session_outcome_unknown,omitempty"`
}

// Session is what an occurrence found of its session's state, for its line.
type Session struct {
	// Began: the store held no state of the session (Record.SessionBegan).
	Began bool
	// State is the session's versions in the shared store when the occurrence was
	// committed there; nil otherwise.
	State *SessionState
	// Unavailable: the occurrence was answered without its session's state
	// (Record.SessionUnavailable).
	Unavailable bool
	// OutcomeUnknown is the version read and the version the commit would have left,
	// when the occurrence was answered without its session after a commit whose
	// outcome is unknown (Record.SessionOutcomeUnknown); nil otherwise.
	OutcomeUnknown *SessionState
}

// SessionState is a session's version in the shared store before and after one
// occurrence. Every commit replaces the version by a new random token, and a commit
// applies only at the version it read, so one session's occurrences took effect in the
// order their versions chain: the occurrence that wrote a version, then those that
// read it and changed nothing (Written equals Read), then the one that changed it.
type SessionState struct {
	// Read is the version the occurrence was evaluated against; empty when the
	// session did not exist (new, or expired).
	Read string `json:"read"`
	// Written is the version the occurrence left: a new one when it changed the
	// session, Read when it changed nothing.
	Written string `json:"written"`
}

// Occurrence is an occurrence in the members of a POST /v1/evaluate body.
type Occurrence struct {
	Anchor         string           `json:"anchor"`
	SessionID      string           `json:"session_id,omitempty"`
	Facts          map[string]any   `json:"facts,omitempty"`
	RecentActivity *[]string        `json:"recent_activity,omitempty"`
	ToolCall       *engine.ToolCall `json:"tool_call,omitempty"`
	// Content is present in full mode only.
	Content *string `json:"content,omitempty"`
}

// Content is what a line says of the occurrence's content.
type Content struct {
	Mode ContentMode `json:"mode"`
	// Length is the content's length in code points, as the engine counts it for
	// transform spans ([OAR-FACT-23]): a replay without the text stands in a
	// placeholder of that length, so the same spans apply or are skipped.
	Length int `json:"length"`
	// SHA256 is the hex SHA-256 of the text, in hash mode.
	SHA256 string `json:"sha256,omitempty"`
}

// Reproducible reports whether the line holds the occurrence whole: it carried no
// content, or the content is logged in full.
func (r *Record) Reproducible() bool {
	return r.Content == nil || r.Content.Mode == ContentFull
}

// NewRecord builds the line of one evaluated occurrence. It copies what it keeps of d.
func NewRecord(now time.Time, bundle string, mode ContentMode, occ *engine.Occurrence, d *engine.Decision) Record {
	r := Record{
		Kind:     Kind,
		Time:     now.UTC(),
		Bundle:   bundle,
		Session:  occ.SessionID,
		Anchor:   occ.Anchor,
		Decision: d.Decision,
		Code:     d.Code,
		Rule:     d.Rule,
		Fired:    []string{},
		Applied:  append([]string{}, d.Applied...),
		Occurrence: Occurrence{
			Anchor:    occ.Anchor,
			SessionID: occ.SessionID,
			Facts:     occ.Facts,
			ToolCall:  occ.ToolCall,
		},
	}
	for _, a := range d.Applied {
		if rule, ok := strings.CutSuffix(a, ":fired"); ok {
			r.Fired = append(r.Fired, rule)
		}
	}
	if occ.HasRecentActivity {
		steps := append([]string{}, occ.RecentActivity...)
		r.Occurrence.RecentActivity = &steps
	}
	if occ.HasContent {
		r.Content = &Content{Mode: mode, Length: codepoint.Count(occ.Content)}
		switch mode {
		case ContentFull:
			text := occ.Content
			r.Occurrence.Content = &text
		case ContentHash:
			sum := sha256.Sum256([]byte(occ.Content))
			r.Content.SHA256 = hex.EncodeToString(sum[:])
		}
	}
	return r
}

// MarshalLine is the line of r: its JSON and a newline. HTML characters are written
// as they are: escaped, a '<' takes six bytes, and a tool argument of them would make
// a line six times its size.
func MarshalLine(r Record) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("decisionlog: encoding the line: %w", err)
	}
	return b.Bytes(), nil
}

// tooLongLine is what the writer logs of an occurrence whose line would be longer
// than MaxLineBytes, so that the reader says which occurrence is missing instead of
// refusing the line: a replay cannot do without it, since its session's state goes on
// from it.
type tooLongLine struct {
	Kind    string    `json:"kind"`
	Time    time.Time `json:"time"`
	Bundle  string    `json:"bundle"`
	Session string    `json:"session_id"`
	Anchor  string    `json:"anchor"`
	// TooLong is the length of the line not written, in bytes.
	TooLong int `json:"too_long"`
}

// marshalTooLong is the too_long marker of r, whose line is size bytes.
func marshalTooLong(r Record, size int) ([]byte, error) {
	b, err := json.Marshal(tooLongLine{Kind: Kind, Time: r.Time, Bundle: r.Bundle, Session: r.Session, Anchor: r.Anchor, TooLong: size})
	if err != nil {
		return nil, fmt.Errorf("decisionlog: encoding the line: %w", err)
	}
	return append(b, '\n'), nil
}
