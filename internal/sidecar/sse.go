package sidecar

import (
	"errors"
	"net/http"
	"time"

	"github.com/oar-operator/oar-operator/internal/sidecar/events"
)

// keepAlive is how often an idle event stream sends a comment, so a client (or a proxy
// in between) can tell a quiet stream from a dead one.
const keepAlive = 15 * time.Second

// eventStream serves GET /v1/events: every publish_event record, as it is published, as
// a server-sent event whose data is the record's JSON (events.Record). A subscriber
// that falls behind is sent a final "dropped" event and disconnected, one that stops
// reading is disconnected once a write has waited StreamWriteTimeout, and shutdown ends
// every stream.
func (s *Sidecar) eventStream(w http.ResponseWriter, r *http.Request) {
	sub, err := s.events.Subscribe()
	if errors.Is(err, events.ErrClosed) {
		writeProblem(w, http.StatusServiceUnavailable, Problem{Error: "the sidecar is shutting down"})
		return
	}
	defer sub.Cancel()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	write := func(p []byte) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(s.opt.StreamWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		_, err := w.Write(p)
		return err == nil && rc.Flush() == nil
	}
	w.WriteHeader(http.StatusOK)
	if !write([]byte(": subscribed to publish_event records\n\n")) {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		var chunk []byte
		select {
		case <-r.Context().Done():
			return
		case rec, open := <-sub.C():
			if !open {
				if sub.Dropped() {
					write([]byte("event: dropped\ndata: {\"error\":\"this subscriber fell behind and was dropped; reconnect\"}\n\n"))
				}
				return
			}
			chunk = append(append(append(chunk, "data: "...), rec...), "\n\n"...)
		case <-tick.C:
			chunk = append(chunk, ": keep-alive\n\n"...)
		}
		if !write(chunk) {
			return
		}
	}
}
