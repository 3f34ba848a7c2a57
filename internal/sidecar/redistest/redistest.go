// Package redistest starts a real redis-server for tests, the way envtest starts etcd:
// on a free loopback port, with a throwaway directory, as a child process the test
// stops. No in-process fake stands in for Redis. hack/install-redis.sh installs
// Debian's redis-server when it is missing (`make test` runs it); REDIS_SERVER names
// another binary.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Server is one redis-server process.
type Server struct {
	// Addr is host:port; URL is redis://Addr.
	Addr, URL string
	dir       string
	port      int
	cmd       *exec.Cmd
	exited    chan struct{}
}

// binary finds redis-server.
func binary() (string, error) {
	if b := os.Getenv("REDIS_SERVER"); b != "" {
		return b, nil
	}
	b, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New("redis-server is not installed: run hack/install-redis.sh (as root: apt-get install -y redis-server) or set REDIS_SERVER")
	}
	return b, nil
}

// Start starts a redis-server keeping its data in dir, on a free port. Its data is
// saved when it is stopped, so a restart continues from it.
func Start(dir string) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	s := &Server{dir: dir, port: port}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) start() error {
	bin, err := binary()
	if err != nil {
		return err
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	s.URL = "redis://" + s.Addr
	s.cmd = exec.Command(bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "3600 1", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes",
		"--logfile", filepath.Join(s.dir, "redis.log"))
	// Its own process group, so a signal for the test's group does not reach it
	// before the test stops it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	s.exited = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s.ping() == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("redis-server exited at start: %s", s.log())
		case <-time.After(5 * time.Millisecond):
		}
	}
	s.Stop()
	return fmt.Errorf("redis-server did not answer on %s within 10s: %s", s.Addr, s.log())
}

// ping sends PING in the protocol's inline form.
func (s *Server) ping() error {
	c, err := net.DialTimeout("tcp", s.Addr, 100*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

func (s *Server) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return string(b)
}

// Stop stops the server with SIGTERM (it saves its data first) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Restart starts the server again on the same port and directory, with the data it
// saved when it stopped.
func (s *Server) Restart() error { return s.start() }

// StartT starts a server for one test, stopped when the test ends.
func StartT(t testing.TB) *Server {
	t.Helper()
	s, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// shared is the server a test package's tests share, started on first use.
var shared struct {
	once sync.Once
	s    *Server
	dir  string
	err  error
}

// Shared returns the server every test of the package shares, starting it on first
// use (so a package's fuzz workers, which never ask, start none). Each test keeps its
// keys apart with a prefix of its own. The package's TestMain must call Main, which
// stops it.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "redistest"); shared.err != nil {
			return
		}
		shared.s, shared.err = Start(shared.dir)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.s
}

var (
	prefixes sync.Map // testing.TB -> its key prefix
	runs     atomic.Int64
)

// Prefix is the key prefix of one run of t on the shared server: the test's name and a
// number no other run in this process has, so what one test's stores write is shared by
// them and by no other test, nor by another run of the same test (go test -count).
func Prefix(t testing.TB) string {
	p, loaded := prefixes.LoadOrStore(t, fmt.Sprintf("%s:%d:", t.Name(), runs.Add(1)))
	if !loaded {
		t.Cleanup(func() { prefixes.Delete(t) })
	}
	return p.(string)
}

// Main runs a test package's tests and then stops the shared server, if one was
// started: func TestMain(m *testing.M) { redistest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	if shared.s != nil {
		shared.s.Stop()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// CPU returns the CPU time the server has used, user and system, from /proc (Linux).
func (s *Server) CPU() (time.Duration, error) {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0, errors.New("redistest: the server is not running")
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which ends with the last ')': state is field 3,
	// utime and stime are fields 14 and 15, in clock ticks of 1/100 s.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("redistest: unexpected /proc stat %q", stat)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// listen listens on a loopback port until the test ends and hands each connection it
// accepts to accept. It returns its host:port.
func listen(t testing.TB, accept func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accept(c)
		}
	}()
	return ln.Addr().String()
}

// Proxy listens on a loopback port until the test ends and connects each client to
// the server at target, handing both connections to relay, which owns them: a test
// makes a real server answer differently in one way (a reply rewritten or lost) with
// the server itself behind it. It returns the proxy's host:port.
func Proxy(t testing.TB, target string, relay func(client, server net.Conn)) string {
	t.Helper()
	return listen(t, func(client net.Conn) {
		server, err := net.Dial("tcp", target)
		if err != nil {
			_ = client.Close()
			return
		}
		relay(client, server)
	})
}

// Silent listens on a loopback port until the test ends, takes every connection and
// never answers: a server that hangs. It returns its host:port.
func Silent(t testing.TB) string {
	t.Helper()
	return listen(t, func(client net.Conn) {
		go func() {
			defer client.Close()
			_, _ = io.Copy(io.Discard, client)
		}()
	})
}

// InfoAnswered is a proxy (Proxy) to the server at target that answers every INFO
// itself with the error reply reply (its text, such as "ERR unsupported command"), as a
// proxy that does not forward INFO to its server does, and forwards every other
// command and its answer as they are: the real server, its version withheld. It
// returns the proxy's host:port and the count of connections it has accepted. An INFO
// is answered as it is read, so a client must have its earlier commands' answers
// before it sends one (go-redis's OnConnect sends INFO alone).
func InfoAnswered(t testing.TB, target, reply string) (addr string, accepted *atomic.Int64) {
	t.Helper()
	accepted = new(atomic.Int64)
	addr = Proxy(t, target, func(client, server net.Conn) {
		accepted.Add(1)
		go func() {
			defer client.Close()
			_, _ = io.Copy(client, server)
		}()
		go func() {
			defer server.Close()
			r := bufio.NewReader(client)
			for {
				cmd, name, err := readCommand(r)
				if err != nil {
					return
				}
				dst, out := server, cmd
				if strings.EqualFold(name, "info") {
					dst, out = client, []byte("-"+reply+"\r\n")
				}
				if _, err := dst.Write(out); err != nil {
					return
				}
			}
		}()
	})
	return addr, accepted
}

// readCommand reads one command a client sends, as an array of bulk strings (or a
// line, the protocol's inline form), and returns its bytes and its name.
func readCommand(r *bufio.Reader) (cmd []byte, name string, err error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, "", err
	}
	if line[0] != '*' {
		name, _, _ = strings.Cut(strings.TrimSpace(string(line)), " ")
		return line, name, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(line[1:])))
	if err != nil {
		return nil, "", fmt.Errorf("redistest: a command's length %q: %w", line, err)
	}
	cmd = line
	for i := range n {
		head, err := r.ReadBytes('\n')
		if err != nil {
			return nil, "", err
		}
		size, err := strconv.Atoi(strings.TrimSpace(string(head[1:])))
		if head[0] != '$' || err != nil {
			return nil, "", fmt.Errorf("redistest: a command's argument %q is not a bulk string", head)
		}
		arg := make([]byte, size+2)
		if _, err := io.ReadFull(r, arg); err != nil {
			return nil, "", err
		}
		if i == 0 {
			name = string(arg[:size])
		}
		cmd = append(append(cmd, head...), arg...)
	}
	return cmd, name, nil
}
