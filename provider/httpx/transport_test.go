package httpx

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/internal/conntest"
	"github.com/cairn-agents/cairn/provider/endpoint"
)

// countingConn counts the writes made on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A body in parts of 3 MiB reaches the server unchanged in a handful of
// writes: net/http alone makes one write per 32 KiB, 96 of them.
func TestTransportWritesARequestBodyInBulk(t *testing.T) {
	var got [sha256.Size]byte
	var gotLen int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		got, gotLen = sha256.Sum256(body), len(body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()

	var writes atomic.Int64
	var d net.Dialer
	transport := bulkTransport(http.DefaultTransport.(*http.Transport).Clone(), func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, writes: &writes}, nil
	})
	defer transport.CloseIdleConnections()

	var parts net.Buffers
	var whole []byte
	for i := range 3 << 10 { // 3,072 parts of 1 KiB, each different
		p := bytes.Repeat([]byte{byte('a' + i%26)}, 1<<10)
		parts = append(parts, p)
		whole = append(whole, p...)
	}
	_, err := Post(context.Background(), Call{
		Client:   &http.Client{Transport: transport},
		Endpoint: endpoint.Endpoint{BaseURL: srv.URL + "/v1"},
		Path:     "/chat/completions",
		Parts:    parts,
	})
	if err != nil {
		t.Fatal(err)
	}
	if gotLen != len(whole) || got != sha256.Sum256(whole) {
		t.Fatalf("the server read %d bytes, not the %d sent", gotLen, len(whole))
	}
	// The headers (and the first bytes of the body, which fill their
	// buffer), then three writes of 1 MiB.
	if n := writes.Load(); n > 5 {
		t.Fatalf("%d writes for a body of %d bytes", n, len(whole))
	}
}

// BenchmarkPostLongBody posts the body of a chat's request at turn 10,000
// (1.5 MB, in 40,000 parts) to a server on loopback, through net/http's
// default transport and through NewTransport. The server runs in the same
// process, so each op's CPU is both ends'.
func BenchmarkPostLongBody(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	var parts net.Buffers
	for i := range 40_000 {
		parts = append(parts, bytes.Repeat([]byte{byte('a' + i%26)}, 38))
	}
	for _, tc := range []struct {
		name      string
		transport *http.Transport
	}{
		{"default", http.DefaultTransport.(*http.Transport).Clone()},
		{"bulk", NewTransport()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			call := Call{Client: &http.Client{Transport: tc.transport}, Endpoint: endpoint.Endpoint{BaseURL: srv.URL + "/v1"},
				Path: "/chat/completions", Parts: parts}
			b.SetBytes(PartsSize(parts))
			start := processCPU(b)
			for b.Loop() {
				if _, err := Post(context.Background(), call); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU(b)-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
			tc.transport.CloseIdleConnections()
		})
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Provider calls made at once keep their connections for the next calls
// made at once: net/http's default keeps two a host, so with more than two
// sessions generating, most calls would open one.
func TestTransportKeepsTheConnectionsOfCallsMadeAtOnce(t *testing.T) {
	conntest.CheckKept(t, `{}`, func(url string) (func() error, func()) {
		transport := NewTransport()
		client := &http.Client{Transport: transport}
		return conntest.Get(client, url), transport.CloseIdleConnections
	})
}
