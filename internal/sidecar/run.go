package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
	"github.com/oar-operator/oar-operator/internal/sidecar/standalone"
)

// Run serves the API on api and the probes and metrics on probes (nil: none), watches
// the bundle directory (or the standalone documents), and sweeps idle sessions, until ctx ends or a listener fails.
// Then it shuts down gracefully: the listeners close, the event streams end, and
// in-flight requests finish within ShutdownTimeout.
func (s *Sidecar) Run(ctx context.Context, api, probes net.Listener) error {
	bg, stopBackground := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stopBackground(); wg.Wait() }()
	if s.opt.BundleDir != "" {
		w := &reload.Watcher{Dir: s.opt.BundleDir, Interval: s.opt.ReloadInterval, Source: s.source}
		wg.Go(func() { w.Run(bg) })
	}
	if s.opt.Documents != nil {
		w := &standalone.Watcher{Files: *s.opt.Documents, Interval: s.opt.ReloadInterval, Source: s.source}
		wg.Go(func() { w.Run(bg) })
	}
	if ttl := s.opt.Sessions.IdleTTL; ttl > 0 {
		wg.Go(func() { s.sweep(bg, ttl) })
	}

	type served struct {
		name string
		srv  *http.Server
		ln   net.Listener
	}
	all := []served{{"api", s.server(s.Handler(), "api"), api}}
	if probes != nil {
		all = append(all, served{"probes", s.server(s.ProbeHandler(), "probes"), probes})
	}
	// Shutdown waits for active connections to go idle; an event stream never does
	// until the stream closes.
	all[0].srv.RegisterOnShutdown(s.events.Close)

	failed := make(chan error, len(all))
	for _, sv := range all {
		s.opt.Log.Info("serving", "server", sv.name, "address", sv.ln.Addr().String())
		go func() {
			if err := sv.srv.Serve(sv.ln); !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("serving %s on %s: %w", sv.name, sv.ln.Addr(), err)
			}
		}()
	}
	var err error
	select {
	case <-ctx.Done():
		s.opt.Log.Info("shutting down: refusing new connections, finishing in-flight requests", "timeout", s.opt.ShutdownTimeout.String())
	case err = <-failed:
		s.opt.Log.Error(err, "a listener failed; shutting down")
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.opt.ShutdownTimeout)
	defer cancel()
	for _, sv := range all {
		if serr := sv.srv.Shutdown(sctx); serr != nil {
			err = errors.Join(err, fmt.Errorf("shutting down: %w", serr))
		}
	}
	return err
}

// server is an http.Server for h. There is no read or write timeout: an event stream
// lives as long as its client, and the API listens on loopback only; request headers
// must arrive promptly and idle connections are closed.
func (s *Sidecar) server(h http.Handler, name string) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(logWriter{s.opt.Log.WithName(name)}, "", 0),
	}
}

// logWriter routes net/http's own messages (a client sending garbage, for example)
// into the structured log.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// sweep forgets idle sessions every quarter of the idle TTL (at most once a second), so
// their memory returns even when no request touches them.
func (s *Sidecar) sweep(ctx context.Context, ttl time.Duration) {
	t := time.NewTicker(max(ttl/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sessions.Sweep()
		}
	}
}
