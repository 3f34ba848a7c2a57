// Command oar-engine is the engine sidecar: it runs
// next to an agent host, loads the OAR bundle its Capability published from the mounted
// ConfigMap directory, reloads it when the kubelet swaps in a new one, and answers
// POST /v1/evaluate on the loopback address. Logs are JSON on stderr; publish_event
// records are JSON lines on stdout. SIGTERM or SIGINT shuts it down gracefully.
// `oar-engine --help` lists the flags and endpoints; internal/sidecar documents the API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/sidecar"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// run is the whole command: parse the flags, listen, serve until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "oar-engine: %v\n", err)
		return exitUsage
	}
	log := logr.FromSlogHandler(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))

	shared, err := o.sharedStore()
	if err != nil {
		fmt.Fprintf(stderr, "oar-engine: --session-store: %v\n", err)
		return exitUsage
	}
	if shared != nil {
		defer shared.Close()
		redisstore.SetLogger(log.WithName("redis"))
	}

	api, err := net.Listen("tcp", net.JoinHostPort(o.address, strconv.Itoa(o.port)))
	if err != nil {
		log.Error(err, "cannot listen for the API")
		return exitFail
	}
	var probes net.Listener
	if o.probeAddress != "" {
		if probes, err = net.Listen("tcp", o.probeAddress); err != nil {
			_ = api.Close()
			log.Error(err, "cannot listen for the probes")
			return exitFail
		}
	}
	decisions, logFile, err := o.openDecisionLog(stdout, log)
	if err != nil {
		_ = api.Close()
		if probes != nil {
			_ = probes.Close()
		}
		log.Error(err, "cannot open the decision log")
		return exitFail
	}
	if decisions != nil {
		defer closeDecisionLog(decisions, logFile, o.shutdown, log)
	}
	sc := sidecar.New(o.sidecarOptions(stdout, log, shared, decisions))
	source := []any{"bundleDir", o.bundleDir}
	if o.standalone {
		source = []any{"capability", o.documents.Capability, "rules", o.documents.Rules, "configs", o.documents.Configs}
	}
	log.Info("starting", append(source, "reloadInterval", o.reloadInterval.String(),
		"maxSessions", o.maxSessions, "sessionIdleTTL", o.sessionIdleTTL.String(), "sessionStore", storeName(shared))...)
	if err := sc.Run(ctx, api, probes); err != nil {
		log.Error(err, "stopped")
		return exitFail
	}
	log.Info("stopped")
	return exitOK
}

// closeDecisionLog writes the lines still buffered, for at most timeout, and closes
// the file.
func closeDecisionLog(w *decisionlog.Writer, file io.Closer, timeout time.Duration, log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		log.Error(err, "closing the decision log", "dropped", w.Dropped(), "writeFailures", w.WriteFailures())
	}
	if file != nil {
		if err := file.Close(); err != nil {
			log.Error(err, "closing the decision log file")
		}
	}
}

// storeName names where sessions live, without credentials.
func storeName(shared *redisstore.Store) string {
	if shared == nil {
		return "memory"
	}
	return shared.String()
}
