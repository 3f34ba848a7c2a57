package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one of the operator's binaries, built into bin/ by `make run`, running
// beside the demo with its output in a log file under tmp/demo.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	// exited is closed once the process has exited, with err what Wait returned.
	exited chan struct{}
	err    error
}

// start runs bin/<name> with args and extra environment. The process gets SIGTERM, as
// the kubelet sends it, when ctx ends; stop waits for it.
func start(ctx context.Context, root, dir, name string, env []string, args ...string) (*process, error) {
	bin := filepath.Join(root, "bin", name)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s is not built (make run builds it): %w", bin, err)
	}
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if verbose {
		w := io.MultiWriter(logFile, os.Stderr)
		cmd.Stdout, cmd.Stderr = w, w
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// stop ends the process (SIGTERM, then SIGKILL after WaitDelay) and waits for it.
func (p *process) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// waitFor polls check until it succeeds, the process exits, or a minute passes.
func (p *process) waitFor(ctx context.Context, what string, check func() bool) error {
	deadline := time.Now().Add(time.Minute)
	for !check() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s did not happen within a minute (log: %s)", p.name, what, p.log)
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before %s: %v (log: %s)", p.name, what, p.err, p.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// freePort returns a loopback port nothing listens on right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// httpOK reports whether url answers 200.
func httpOK(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// tlsServes reports whether addr completes a TLS handshake with a certificate of the CA
// (the webhook server does once it has loaded the certificate the API server trusts).
func tlsServes(addr string, ca []byte) bool {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{RootCAs: roots})
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
