package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// conn is one keep-alive HTTP/1.1 connection to the engine, used by one goroutine at a
// time: the request is written and the response read on that goroutine, so the
// generator adds no goroutine hand-offs of its own (as net/http's client does) to the
// latency it measures. A round trip allocates nothing: requests are rendered before
// the run and the response body is read into a reused buffer, so the generator's
// collector has nothing to do while it measures.
type conn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
	body []byte
}

func newConn(addr string) *conn { return &conn{addr: addr} }

// render is a whole POST request for body, ready to write.
func render(addr, path string, body []byte) []byte {
	req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, addr, len(body))
	return append(req, body...)
}

// renderGet is a whole GET request for path, ready to write.
func renderGet(addr, path string) []byte {
	return fmt.Appendf(nil, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
}

// do writes a rendered request and returns the status and the body, which is valid
// until the next call; a broken connection is redialed on the next call.
func (k *conn) do(req []byte) (int, []byte, error) {
	if k.c == nil {
		c, err := net.Dial("tcp", k.addr)
		if err != nil {
			return 0, nil, err
		}
		k.c, k.br = c, bufio.NewReader(c)
	}
	status, body, err := k.roundTrip(req)
	if err != nil {
		k.close()
	}
	return status, body, err
}

func (k *conn) roundTrip(req []byte) (int, []byte, error) {
	if _, err := k.c.Write(req); err != nil {
		return 0, nil, err
	}
	line, err := k.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, nil, fmt.Errorf("not an HTTP/1.1 status line: %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("status line %q: %w", line, err)
	}
	length, closing, err := k.headers()
	if err != nil {
		return status, nil, err
	}
	k.body = append(k.body[:0], make([]byte, length)...)
	if _, err := io.ReadFull(k.br, k.body); err != nil {
		return status, nil, err
	}
	if closing {
		return status, k.body, errors.New("the engine closed the connection")
	}
	return status, k.body, nil
}

// headers reads the response headers, returning Content-Length, which the engine
// always sends, and whether the engine will close the connection.
func (k *conn) headers() (length int, closing bool, err error) {
	length = -1
	for {
		line, err := k.br.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, false, fmt.Errorf("Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, false, fmt.Errorf("Transfer-Encoding %q: the engine always sends Content-Length", value)
		}
	}
	if length < 0 {
		return 0, false, errors.New("a response without Content-Length")
	}
	return length, closing, nil
}

func (k *conn) close() {
	if k.c != nil {
		k.c.Close()
		k.c = nil
	}
}
