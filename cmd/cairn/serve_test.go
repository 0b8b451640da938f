package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/internal/testenv"
)

// startServeCommand runs `cairn serve` in-process on a free loopback port
// with args and returns its address; the server stops with the test.
func startServeCommand(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out testenv.Buffer
	cmd := serveCommand()
	cmd.SetArgs(append([]string{"--data", t.TempDir(), "--listen", "127.0.0.1:0", "--gc-interval", "0"}, args...))
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	var addr string
	eventually(t, "serve to listen", func() bool {
		_, rest, ok := strings.Cut(out.String(), "listening on ")
		addr = strings.TrimSpace(rest)
		return ok && strings.HasSuffix(rest, "\n")
	})
	return addr
}

// A page the user opens must not drive the embedded server: not with a
// text/plain POST, not from its own origin, not under a rebound DNS name,
// on /rpc and on the inspector's routes alike. --allow-origin and
// --allow-host admit what the operator names.
func TestServeRefusesForeignPages(t *testing.T) {
	addr := startServeCommand(t, "--allow-origin", "https://app.example", "--allow-host", "cairn.lan")
	_, port, _ := net.SplitHostPort(addr)
	do := func(method, path, host, origin, ctype string) int {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"session/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	cases := []struct {
		name                       string
		method, path, host, origin string
		ctype                      string
		want                       int
	}{
		{"text/plain from another page", "POST", "/rpc", "", "http://evil.example", "text/plain", http.StatusForbidden},
		{"text/plain", "POST", "/rpc", "", "", "text/plain", http.StatusUnsupportedMediaType},
		{"JSON from another origin", "POST", "/rpc", "", "http://evil.example", "application/json", http.StatusForbidden},
		{"rebound name", "POST", "/rpc", "evil.example:" + port, "http://evil.example:" + port, "application/json", http.StatusForbidden},
		{"inspector under a rebound name", "GET", "/", "evil.example:" + port, "", "", http.StatusForbidden},
		{"blob page under a rebound name", "GET", "/blobs/sha256:00", "evil.example:" + port, "", "", http.StatusForbidden},
		{"own JSON", "POST", "/rpc", "", "http://" + addr, "application/json", http.StatusOK},
		{"listed origin", "POST", "/rpc", "", "https://app.example", "application/json", http.StatusOK},
		{"listed host", "POST", "/rpc", "cairn.lan:" + port, "http://cairn.lan:" + port, "application/json", http.StatusOK},
		{"localhost", "GET", "/", "localhost:" + port, "", "", http.StatusOK},
		{"inspector", "GET", "/", "", "", "", http.StatusOK},
	}
	for _, tc := range cases {
		if got := do(tc.method, tc.path, tc.host, tc.origin, tc.ctype); got != tc.want {
			t.Errorf("%s: HTTP %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestListenHosts(t *testing.T) {
	got := listenHosts("myhost:8420", &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 8420})
	if strings.Join(got, ",") != "myhost,192.0.2.7" {
		t.Fatalf("listenHosts = %v", got)
	}
	for _, h := range listenHosts("0.0.0.0:8420", &net.TCPAddr{IP: net.IPv4zero, Port: 8420}) {
		if h == "0.0.0.0" {
			t.Fatal("the unspecified address is not a name of this server")
		}
	}
}

// serve --max-response-bytes bounds what one response carries.
func TestServeMaxResponseBytes(t *testing.T) {
	addr := startServeCommand(t, "--max-response-bytes", "1000")
	c := api.NewClient(addr, nil)
	ctx := context.Background()
	put, err := c.PutBlob(ctx, make([]byte, 2000), "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ReadBlob(ctx, api.BlobReadParams{Ref: api.DigestRef(put.Ref.Digest)})
	var rpcErr *api.Error
	if !errors.As(err, &rpcErr) || rpcErr.Kind() != api.KindResponseTooLarge {
		t.Fatalf("reading 2000 bytes under a 1000-byte limit: %v", err)
	}
	length := int64(500)
	if got, err := c.ReadBlob(ctx, api.BlobReadParams{Ref: api.DigestRef(put.Ref.Digest), Length: &length}); err != nil || len(got.Data) != 500 || got.Size != 2000 {
		t.Fatalf("a part within the limit: %d bytes of %d, %v", len(got.Data), got.Size, err)
	}
	if err := serveCommand().ParseFlags([]string{"--max-response-bytes", "x"}); err == nil {
		t.Fatal("a malformed --max-response-bytes was accepted")
	}
}

// A connection left idle after its answer is closed by the server once
// idleConnTimeout passes, so idle clients cannot hold descriptors forever.
func TestServeClosesIdleConnections(t *testing.T) {
	defer func(d time.Duration) { idleConnTimeout = d }(idleConnTimeout)
	idleConnTimeout = 200 * time.Millisecond
	addr := startServeCommand(t)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}`
	if _, err := fmt.Fprintf(conn, "POST /rpc HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.Close {
		t.Fatal("the server closed the connection after its answer; the test needs it kept")
	}
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("an idle connection: read %d bytes, %v; want the server to close it (EOF)", n, err)
	}
}
