package sidecar

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/oar-operator/oar-operator/internal/testpoll"
)

// TestReadBodyMatchesMaxBytesReader: readBody gives, for bodies under, at and over the
// limit, with their length declared, undeclared or wrongly declared, read whole or in
// pieces, the bytes and the error that reading the body through http.MaxBytesReader
// into a bytes.Buffer gives. A body whose reading fails gives the failure, or, when it
// is over the limit, either that or *http.MaxBytesError: which comes first depends on
// how much each read asks for, with a bytes.Buffer too.
func TestReadBodyMatchesMaxBytesReader(t *testing.T) {
	const limit = 600
	failure := errors.New("connection reset")
	readers := map[string]func([]byte) io.Reader{
		"whole":        func(b []byte) io.Reader { return bytes.NewReader(b) },
		"byte by byte": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"data and EOF": func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
		"half":         func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
	}
	failing := map[string]func([]byte) io.Reader{
		"then failing": func(b []byte) io.Reader { return io.MultiReader(bytes.NewReader(b), iotest.ErrReader(failure)) },
		"timing out":   func(b []byte) io.Reader { return iotest.TimeoutReader(bytes.NewReader(b)) },
	}
	for _, size := range []int{0, 1, 511, 512, 513, limit - 1, limit, limit + 1, 2 * limit, 70000} {
		body := bytes.Repeat([]byte("x"), size)
		for _, declared := range []int64{-1, 0, int64(size), int64(size) / 2, int64(size) + 10, 1 << 40} {
			request := func(r io.Reader) *http.Request {
				req := httptest.NewRequest(http.MethodPost, "/v1/evaluate", nil)
				req.Body, req.ContentLength = io.NopCloser(r), declared
				return req
			}
			for name, reader := range readers {
				var want bytes.Buffer
				_, wantErr := want.ReadFrom(http.MaxBytesReader(httptest.NewRecorder(), request(reader(body)).Body, limit))
				got, err := readBody(make([]byte, 0, 3), httptest.NewRecorder(), request(reader(body)), limit)
				if !bytes.Equal(got, want.Bytes()) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Errorf("%d bytes, %d declared, %s: %d bytes, %v; want %d bytes, %v", size, declared, name, len(got), err, want.Len(), wantErr)
				}
				var tooLarge *http.MaxBytesError
				if (wantErr != nil) != (size > limit) || wantErr != nil && (!errors.As(err, &tooLarge) || tooLarge.Limit != limit) {
					t.Errorf("%d bytes, %d declared, %s: %v, want *http.MaxBytesError of %d past the limit", size, declared, name, err, limit)
				}
			}
			for name, reader := range failing {
				if size == 0 {
					break // nothing to read before the failure: iotest.TimeoutReader reports the end
				}
				_, err := readBody(nil, httptest.NewRecorder(), request(reader(body)), limit)
				var tooLarge *http.MaxBytesError
				if !errors.Is(err, failure) && !errors.Is(err, iotest.ErrTimeout) && (size <= limit || !errors.As(err, &tooLarge)) {
					t.Errorf("%d bytes, %d declared, %s: %v", size, declared, name, err)
				}
			}
		}
	}
}

// TestTooLargeBodyClosesConnection: a body over the limit is answered 413 and the
// server closes the connection after it rather than read the rest, as it does for a
// body read through http.MaxBytesReader, whether the request declares its length or
// sends it in chunks.
func TestTooLargeBodyClosesConnection(t *testing.T) {
	ts := serve(t, sealed(t, testCapability, testRules), Options{MaxBodyBytes: 512})
	addr := strings.TrimPrefix(ts.srv.URL, "http://")
	big := occ("tool.pre_invoke", "s", `"content": "`+strings.Repeat("x", 600)+`"`)
	for name, framing := range map[string]string{
		"declared": fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(big), big),
		"chunked":  fmt.Sprintf("Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(big), big),
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := fmt.Fprintf(c, "POST /v1/evaluate HTTP/1.1\r\nHost: %s\r\n%s", addr, framing); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
			t.Errorf("%s: status %d, Connection %q; want 413 and the connection closed", name, resp.StatusCode, resp.Header.Get("Connection"))
		}
	}
}

// TestStalledBodiesGiveTheirRoomBack: clients that declare a large body and stop
// sending it hold the reading room of the request budget only until BodyReadTimeout;
// then they get a 408 and a small request waiting behind them is answered. Without the
// deadline, bodies that never arrive would hold the room, and every evaluation, for
// good.
func TestStalledBodiesGiveTheirRoomBack(t *testing.T) {
	const timeout = 300 * time.Millisecond
	// Reading room is a quarter of the request budget: two stalled 1 KiB bodies fill it.
	ts := serve(t, sealed(t, testCapability, testRules), Options{MaxBodyBytes: 1024, MaxRequestBytes: 8 << 10, BodyReadTimeout: timeout})
	addr := strings.TrimPrefix(ts.srv.URL, "http://")
	statuses := make(chan int, 2)
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := fmt.Fprintf(c, "POST /v1/evaluate HTTP/1.1\r\nHost: %s\r\nContent-Length: 1024\r\n\r\n{\"anchor\"", addr); err != nil {
			t.Fatal(err)
		}
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	testpoll.Until(t, 10*time.Second, time.Millisecond, "the stalled bodies holding the reading room", func() bool {
		if ts.requests.reading.TryAcquire(1) {
			ts.requests.reading.Release(1)
			return false
		}
		return true
	})
	start := time.Now()
	a := ts.evaluate(t, occ("tool.pre_invoke", "s", `"tool_call": {"name": "read", "arguments": {}}`))
	if waited := time.Since(start); a.Decision == nil || waited < timeout/2 {
		t.Errorf("answered %+v after %s; want a decision once the stalled bodies' deadline passed", a, waited)
	}
	for range 2 {
		if got := <-statuses; got != http.StatusRequestTimeout {
			t.Errorf("a stalled body got status %d; want 408", got)
		}
	}
}
