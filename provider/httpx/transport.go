package httpx

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
)

// NewTransport returns the transport provider calls use: net/http's
// default, except that it keeps as many idle connections to one host as
// to all of them, and that a connection writes a request body in writes
// of up to bulkWrite bytes.
//
// net/http keeps two idle connections a host. Every session of a server
// calls the same few provider hosts, so with more than two generating at
// once most calls found no idle connection and opened one (over TLS, a
// handshake each): 543 connections for 1,600 turns of eight sessions
// (BenchmarkServeManySessions).
//
// net/http copies a body of known length through a 32 KiB buffer, one
// write(2) each. A chat's request at turn 10,000 is 1.5 MB: 46 writes, and
// over a loopback connection (a model server on the same machine) those
// writes cost twice the CPU of one 1.5 MB write. Over TLS the body goes
// through tls.Conn, which writes its own records; this changes nothing
// there.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = t.MaxIdleConns
	return bulkTransport(t, t.DialContext)
}

// bulkTransport makes t dial through dial and wrap each connection.
func bulkTransport(t *http.Transport, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &bulkConn{Conn: c}, nil
	}
	return t
}

// bulkWrite is the most one write of a request body carries.
const bulkWrite = 1 << 20

// bulkBuffers are bulkWrite-byte buffers, held only while a body is written.
var bulkBuffers = sync.Pool{New: func() any { b := make([]byte, bulkWrite); return &b }}

// bulkConn is a connection whose ReadFrom (what net/http calls to copy a
// request body) fills a large buffer before each write.
type bulkConn struct{ net.Conn }

func (c *bulkConn) ReadFrom(r io.Reader) (int64, error) {
	bp := bulkBuffers.Get().(*[]byte)
	defer bulkBuffers.Put(bp)
	var total int64
	for {
		n, err := io.ReadFull(r, *bp)
		if n > 0 {
			w, werr := c.Conn.Write((*bp)[:n])
			total += int64(w)
			if werr != nil {
				return total, werr
			}
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return total, nil
		case err != nil:
			return total, err
		}
	}
}
