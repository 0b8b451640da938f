package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, target string, header map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// assetPaths are the asset URLs index.html references.
func assetPaths(t *testing.T, index string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?:href|src)="(/assets/[^"]+)"`).FindAllStringSubmatch(index, -1)
	var out []string
	for _, x := range m {
		out = append(out, x[1])
	}
	if len(out) == 0 {
		t.Fatal("index.html references no assets")
	}
	return out
}

func TestPagesServeIndexWithoutCaching(t *testing.T) {
	h := Handler()
	for _, p := range []string{"/", "/sessions", "/sessions/s_1", "/sessions/a%2Fb", "/blobs/sha256:abc?type=image%2Fpng"} {
		r := get(t, h, http.MethodGet, p, nil)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "text/html; charset=utf-8" || r.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: %d %q %q, want 200 text/html no-cache", p, r.StatusCode, r.Header.Get("Content-Type"), r.Header.Get("Cache-Control"))
		}
		if b := body(t, r); !strings.Contains(b, `<main id="main"`) || strings.Contains(b, assetsPlaceholder) {
			t.Errorf("GET %s did not serve the inspector's page", p)
		}
		checkDefenceHeaders(t, "GET "+p, r)
	}
	for _, p := range []string{"/rpcx", "/sessions/a/b", "/blobs/", "/favicon.ico", "/assets/", "/assets/v/nope.js"} {
		if r := get(t, h, http.MethodGet, p, nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, r.StatusCode)
		}
	}
	if r := get(t, h, http.MethodPost, "/", nil); r.StatusCode != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: %d, Allow %q", r.StatusCode, r.Header.Get("Allow"))
	}
	if r := get(t, h, http.MethodHead, "/", nil); r.StatusCode != http.StatusOK || body(t, r) != "" || r.Header.Get("Content-Length") == "" {
		t.Errorf("HEAD /: %d, want 200 with a length and no body", r.StatusCode)
	}
}

// checkDefenceHeaders asserts what every inspector response carries so
// that nothing it serves runs script it did not ship: no inline or foreign
// script, no plugins, no framing, no HTML-string sinks, no sniffing, and
// no window handle for a page that opened it.
func checkDefenceHeaders(t *testing.T, what string, r *http.Response) {
	t.Helper()
	csp := r.Header.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'self'", "script-src 'self'", "object-src 'none'", "frame-src 'none'", "base-uri 'none'",
		"frame-ancestors 'none'", "require-trusted-types-for 'script'", "trusted-types 'none'"} {
		if !strings.Contains(csp, d+";") && !strings.HasSuffix(csp, d) {
			t.Errorf("%s: Content-Security-Policy %q lacks %s", what, csp, d)
		}
	}
	if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "data:") {
		t.Errorf("%s: Content-Security-Policy %q allows inline code or data: URLs", what, csp)
	}
	if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options %q, want nosniff", what, got)
	}
	if got := r.Header.Get("Cross-Origin-Opener-Policy"); got != "same-origin" {
		t.Errorf("%s: Cross-Origin-Opener-Policy %q, want same-origin", what, got)
	}
}

func TestAssetsAreTypedVersionedAndCompressed(t *testing.T) {
	h := Handler()
	index := body(t, get(t, h, http.MethodGet, "/", nil))
	want := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
	for _, p := range assetPaths(t, index) {
		r := get(t, h, http.MethodGet, p, nil)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != want[path.Ext(p)] {
			t.Errorf("GET %s: %d %q", p, r.StatusCode, r.Header.Get("Content-Type"))
		}
		checkDefenceHeaders(t, "GET "+p, r)
		if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s: Cache-Control %q, want immutable", p, cc)
		}
		plain := body(t, r)
		gz := get(t, h, http.MethodGet, p, map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
		if gz.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(gz.Body)
			if err != nil {
				t.Fatal(err)
			}
			unzipped, _ := io.ReadAll(zr)
			if string(unzipped) != plain || gz.Header.Get("ETag") == r.Header.Get("ETag") {
				t.Errorf("GET %s with gzip: a different body, or the plain body's ETag", p)
			}
		} else if len(plain) > 1024 {
			t.Errorf("GET %s (%d bytes) was not compressed", p, len(plain))
		}
		if nm := get(t, h, http.MethodGet, p, map[string]string{"If-None-Match": r.Header.Get("ETag")}); nm.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", p, nm.StatusCode)
		}
	}
	// A page of an older build asks for its own version: it gets today's
	// file, which must not be cached under the old name.
	stale := get(t, h, http.MethodGet, "/assets/000000000000/app.js", nil)
	if stale.StatusCode != http.StatusOK || stale.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("an older version's asset: %d %q", stale.StatusCode, stale.Header.Get("Cache-Control"))
	}
	if acceptsGzip("gzip;q=0") || acceptsGzip("identity") || !acceptsGzip("deflate, GZIP") {
		t.Error("acceptsGzip misreads Accept-Encoding")
	}
}

func TestEveryModuleIsPreloaded(t *testing.T) {
	// The modules import each other; preloading them all avoids a waterfall
	// of round trips before the first render.
	index := body(t, get(t, Handler(), http.MethodGet, "/", nil))
	mods, err := fs.Glob(static, "static/assets/*.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		name := path.Base(m)
		want := regexp.MustCompile(`<link rel="modulepreload" href="/assets/[0-9a-f]{12}/` + regexp.QuoteMeta(name) + `">`)
		if name == "app.js" {
			want = regexp.MustCompile(`<script type="module" src="/assets/[0-9a-f]{12}/app.js">`)
		}
		if !want.MatchString(index) {
			t.Errorf("index.html does not load %s up front", name)
		}
	}
}

func TestWithAPIRoutesRPC(t *testing.T) {
	rpc := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "rpc "+r.Method) })
	h := WithAPI(rpc)
	if b := body(t, get(t, h, http.MethodPost, "/rpc", nil)); b != "rpc POST" {
		t.Errorf("POST /rpc reached %q", b)
	}
	if b := body(t, get(t, h, http.MethodGet, "/sessions/x", nil)); !strings.Contains(b, "<!doctype html>") {
		t.Error("GET /sessions/x did not reach the inspector")
	}
	if b := body(t, get(t, h, http.MethodGet, "/sessions/x/stream", nil)); b != "rpc GET" {
		t.Errorf("GET /sessions/x/stream (the API's event stream) reached %q", b)
	}
}

// TestPageWeight reports the bytes a first visit downloads, raw and
// gzipped, and keeps them within a budget: the inspector is a tool page.
func TestPageWeight(t *testing.T) {
	s, err := loadSite()
	if err != nil {
		t.Fatal(err)
	}
	type weight struct{ raw, gz int }
	byKind := map[string]*weight{}
	add := func(kind string, f file) {
		w := byKind[kind]
		if w == nil {
			w = &weight{}
			byKind[kind] = w
		}
		w.raw += len(f.body)
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(f.body)
		zw.Close()
		w.gz += buf.Len()
	}
	add("html", s.index)
	names := make([]string, 0, len(s.assets))
	for name := range s.assets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		add(strings.TrimPrefix(path.Ext(name), "."), s.assets[name])
		t.Logf("%-16s %6d bytes", name, len(s.assets[name].body))
	}
	var total weight
	for _, kind := range []string{"html", "css", "js", "svg"} {
		w := byKind[kind]
		total.raw += w.raw
		total.gz += w.gz
		t.Logf("%-4s %6d bytes raw, %6d gzipped", kind, w.raw, w.gz)
	}
	t.Logf("all  %6d bytes raw, %6d gzipped", total.raw, total.gz)
	if total.raw > 160_000 || total.gz > 45_000 {
		t.Errorf("the inspector weighs %d bytes (%d gzipped); the budget is 160,000 (45,000)", total.raw, total.gz)
	}
}
