// Package web serves the inspector: a single-page application, embedded in
// the binary, that reads sessions and starts, steers and cancels runs
// through the JSON-RPC API at /rpc. It is plain HTML, CSS and JavaScript
// modules; nothing is built, so the files under static/ are what browsers get.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
)

//go:embed static
var static embed.FS

// assetsPlaceholder in index.html becomes the versioned asset prefix.
const assetsPlaceholder = "{{assets}}"

// Response headers: index.html is revalidated on every load so a new binary
// takes effect at once; assets live under a path that names their content
// hash, so a browser may keep them for good.
const (
	cacheIndex     = "no-cache"
	cacheVersioned = "public, max-age=31536000, immutable"
	cacheStale     = "no-cache"
	assetURLPrefix = "/assets/"
	// The page loads only its own scripts and styles and talks only to its
	// own origin; blob: URLs carry the bytes the blob page shows. It has no
	// frames, workers or plugins, builds its DOM without HTML strings (so
	// Trusted Types may refuse every such sink), and is framed by no one.
	contentSecurityPolicy = "default-src 'self'; script-src 'self'; connect-src 'self' blob:; img-src 'self' blob:; media-src 'self' blob:; " +
		"frame-src 'none'; worker-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; " +
		"require-trusted-types-for 'script'; trusted-types 'none'"
	// gzipMinSaving is how much smaller a compressed body must be to be used.
	gzipMinSaving = 64
)

// file is one servable response body, with its gzip form when that is smaller.
type file struct {
	body, gz    []byte
	ctype       string
	etag, gzTag string // one entity tag per representation
}

// site is the embedded inspector, prepared once: bodies, compressed
// bodies, content types and the version that prefixes asset URLs.
type site struct {
	version string
	index   file
	assets  map[string]file // by path under assets/
}

var loadSite = sync.OnceValues(func() (*site, error) { return newSite(static) })

// contentTypes are set explicitly: the platform's MIME table may be absent
// or map .js to a type browsers refuse for modules.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
}

func newSite(fsys fs.FS) (*site, error) {
	s := &site{assets: map[string]file{}}
	raw := map[string][]byte{}
	err := fs.WalkDir(fsys, "static/assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		raw[strings.TrimPrefix(p, "static/assets/")] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: reading embedded assets: %w", err)
	}
	// The version covers every asset's name and bytes, so any change moves
	// every URL and no cached copy outlives it.
	h := sha256.New()
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(raw[name]))
		h.Write(raw[name])
	}
	s.version = hex.EncodeToString(h.Sum(nil))[:12]
	for _, name := range names {
		ctype, ok := contentTypes[path.Ext(name)]
		if !ok {
			ctype = "application/octet-stream"
		}
		s.assets[name] = newFile(raw[name], ctype)
	}
	index, err := fs.ReadFile(fsys, "static/index.html")
	if err != nil {
		return nil, fmt.Errorf("web: reading embedded index.html: %w", err)
	}
	if !bytes.Contains(index, []byte(assetsPlaceholder)) {
		return nil, fmt.Errorf("web: index.html does not reference %s", assetsPlaceholder)
	}
	index = bytes.ReplaceAll(index, []byte(assetsPlaceholder), []byte(s.assetPrefix()))
	s.index = newFile(index, contentTypes[".html"])
	return s, nil
}

func newFile(body []byte, ctype string) file {
	sum := sha256.Sum256(body)
	tag := hex.EncodeToString(sum[:8])
	f := file{body: body, ctype: ctype, etag: `"` + tag + `"`, gzTag: `"` + tag + `-gz"`}
	if gz := gzipBytes(body); len(gz)+gzipMinSaving < len(body) {
		f.gz = gz
	}
	return f
}

func gzipBytes(data []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
	_, _ = zw.Write(data)                                    // writes to memory do not fail
	_ = zw.Close()
	return buf.Bytes()
}

// assetPrefix is the URL path under which this build's assets are served.
func (s *site) assetPrefix() string { return assetURLPrefix + s.version + "/" }

// Handler serves the inspector: index.html for its pages (/, /sessions/…,
// /blobs/…) and the embedded assets under /assets/VERSION/. It answers GET
// and HEAD only; mount the JSON-RPC API beside it (see WithAPI).
func Handler() http.Handler {
	s, err := loadSite()
	if err != nil {
		// The assets are compiled in: a failure here is a broken build,
		// reported on every request rather than crashing the server.
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		})
	}
	return s
}

// WithAPI routes /rpc, the session stream and the archive endpoints to the
// API handler and every other path to the
// inspector, so one listener serves both.
func WithAPI(rpc http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/rpc", rpc)
	mux.Handle("GET /sessions/{id}/stream", rpc) // the API's Server-Sent Events
	mux.Handle("POST /export", rpc)              // archives (cairn export, cairn import)
	mux.Handle("POST /import", rpc)
	mux.Handle("/", Handler())
	return mux
}

// isPage reports whether p is a route of the single-page app.
func isPage(p string) bool {
	if p == "/" || p == "/sessions" || p == "/sessions/" {
		return true
	}
	for _, prefix := range []string{"/sessions/", "/blobs/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			return rest != "" && !strings.Contains(rest, "/")
		}
	}
	return false
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the inspector answers GET and HEAD only; the API is POST /rpc", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, assetURLPrefix); ok {
		version, name, _ := strings.Cut(rest, "/")
		f, found := s.assets[name]
		if !found {
			http.NotFound(w, r)
			return
		}
		cache := cacheVersioned
		if version != s.version {
			// A page from an older build asks for its own version: it gets
			// today's file, which must not be cached under the old name.
			cache = cacheStale
		}
		s.write(w, r, f, cache)
		return
	}
	// The escaped path keeps an id's encoded slash (%2F) inside its segment.
	if !isPage(r.URL.EscapedPath()) {
		http.NotFound(w, r)
		return
	}
	s.write(w, r, s.index, cacheIndex)
}

func (s *site) write(w http.ResponseWriter, r *http.Request, f file, cache string) {
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("Cache-Control", cache)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	// A page that opens the inspector (any site can link to it) keeps no
	// handle on its window.
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Add("Vary", "Accept-Encoding")
	body, tag := f.body, f.etag
	if f.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body, tag = f.gz, f.gzTag
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("ETag", tag)
	if etagMatches(r.Header.Get("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// etagMatches reports whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for If-None-Match).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, _ := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		return q == "" || (q != "0" && q != "0.0" && q != "0.00" && q != "0.000")
	}
	return false
}
