package web

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/cairn-agents/cairn/content"
)

// The blob page shows bytes a model may have written, reached by a link any
// web page may have written. A blob: URL it makes belongs to the
// inspector's origin, and a user can open one as a document ("open image in
// new tab"), so every such URL must be of a type that cannot run script.

// inertBlobTypes are the only types the page may give a blob: URL.
var inertBlobTypes = []string{
	"application/octet-stream",
	"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp",
	"audio/mpeg", "audio/wav", "audio/x-wav", "audio/wave", "audio/ogg", "audio/flac", "audio/mp4", "audio/aac", "audio/webm",
	"video/mp4", "video/webm", "video/ogg",
}

// scriptRan is the title a hostile document's script gives its document.
const scriptRan = "script ran"

// hostile is a document of the given kind (svg, html or xhtml) whose
// script, if it ever runs, retitles its document and calls /rpc with the
// method "xss/NAME", as the reported attack did.
func hostile(kind, name string) string {
	script := fmt.Sprintf(`document.title='%s';fetch(origin+'/rpc',{method:'POST',headers:{'Content-Type':'application/json'},body:'{"jsonrpc":"2.0","id":1,"method":"xss/%s","params":{}}'})`, scriptRan, name)
	switch kind {
	case "svg":
		return `<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20"><title>inert</title><script>` + script + `</script><rect width="20" height="20" fill="teal"/></svg>`
	case "html":
		return `<!doctype html><title>inert</title><p>hello</p><script>` + script + `</script>`
	}
	return `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>inert</title></head><body><script>` + script + `</script></body></html>`
}

// recordBlobURLs runs before any script of each page: it records every
// blob: URL the page makes and the type of the Blob behind it, and keeps
// the original maker for the test's own control.
const recordBlobURLs = `(() => {
  const make = URL.createObjectURL.bind(URL);
  window.__makeBlobURL = make;
  window.__blobURLs = [];
  URL.createObjectURL = (obj) => {
    const u = make(obj);
    window.__blobURLs.push({ url: u, type: (obj && obj.type) || '' });
    return u;
  };
})()`

type madeURL struct {
	URL  string `json:"url"`
	Type string `json:"type"`
}

// openAsDocument navigates a tab to url, as "open in new tab" would, and
// returns the title of the document it shows. A download (refused here)
// leaves the blank page the tab was on.
func openAsDocument(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("blanking the probe tab: %v", err)
	}
	err := chromedp.Do(ctx, chromedp.Navigate(url))
	var le *chromedp.LoadError
	if err != nil && !(errors.As(err, &le) && strings.Contains(le.ErrorText, "ERR_ABORTED")) {
		t.Fatalf("opening %s: %v", url, err)
	}
	title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.title`))
	if err != nil {
		t.Fatalf("reading the title of %s: %v", url, err)
	}
	return title
}

func TestBlobPageNeverMakesScriptableURLs(t *testing.T) {
	t.Parallel()
	in := newInstance(t, instanceOptions{})
	svg, html, xhtml := hostile("svg", "svg"), hostile("html", "html"), hostile("xhtml", "xhtml")
	svgRef := putBlob(t, in, []byte(svg), "image/svg+xml")
	htmlRef := putBlob(t, in, []byte(html), "text/html")
	xhtmlRef := putBlob(t, in, []byte(xhtml), "application/xhtml+xml")
	pngRef := putBlob(t, in, tinyPNG(t), "image/png")

	tb := newTab(t)
	tb.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordBlobURLs})
		return err
	}))
	// A second tab of the same browser context opens the URLs the first
	// one makes; downloads are refused, so nothing is written to disk.
	probe, cancelProbe := chromedp.NewContext(tb.ctx)
	t.Cleanup(cancelProbe)
	if err := chromedp.Do(probe, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := cdp.Call(ctx, chromedp.FromContext(ctx).Browser, cdpbrowser.SetDownloadBehavior,
			cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorDeny})
		return err
	})); err != nil {
		t.Fatalf("opening the probe tab: %v", err)
	}

	links := []struct {
		name      string
		ref       content.Digest
		mediaType string
		source    string // the bytes the page must show as text, if any
	}{
		{"the reported attack: an SVG with a script, typed by the link", svgRef.Digest, "image/svg+xml", svg},
		{"the SVG sniffed", svgRef.Digest, "", svg},
		{"the SVG typed with a parameter and capitals", svgRef.Digest, "IMAGE/SVG+XML; charset=utf-8", svg},
		{"the SVG typed as HTML", svgRef.Digest, "text/html", svg},
		{"the SVG typed as audio that is XML", svgRef.Digest, "audio/x-cairn+xml", svg},
		{"HTML typed as HTML", htmlRef.Digest, "text/html", html},
		{"HTML typed as XHTML", htmlRef.Digest, "application/xhtml+xml", html},
		{"XHTML typed as XML", xhtmlRef.Digest, "text/xml", xhtml},
		{"HTML typed as a PNG", htmlRef.Digest, "image/png", ""},
		{"HTML typed as audio", htmlRef.Digest, "audio/wav", ""},
		{"a real PNG", pngRef.Digest, "image/png", ""},
	}
	for _, l := range links {
		tb.open(blobURL(in, l.ref, l.mediaType))
		tb.wait(`!!document.getElementById('download')`)
		if l.source != "" {
			if got := eval[string](tb, `(document.getElementById('blob-text') || {}).textContent || ''`); got != l.source {
				t.Errorf("%s: the page shows %q, want the bytes as text", l.name, got)
			}
		}
		made := eval[[]madeURL](tb, `window.__blobURLs`)
		if len(made) == 0 {
			t.Errorf("%s: the page made no blob: URL, not even the download's", l.name)
		}
		for _, m := range made {
			if !slices.Contains(inertBlobTypes, m.Type) {
				t.Errorf("%s: the page made %s of type %q, which can run script", l.name, m.URL, m.Type)
			}
			if title := openAsDocument(t, probe, m.URL); title == scriptRan {
				t.Errorf("%s: opening %s (type %q) as a document ran its script", l.name, m.URL, m.Type)
			}
		}
	}
	// The real image is still drawn.
	tb.wait(`(() => { const i = document.getElementById('blob-image'); return i && i.complete && i.naturalWidth === 3; })()`)
	// Defence in depth: the served policy is in force, so the page turns
	// no HTML string into markup.
	if got := eval[string](tb, `(() => { try { document.createElement('div').innerHTML = '<b>x</b>'; return 'allowed'; } catch (e) { return e.name; } })()`); got != "TypeError" {
		t.Errorf("assigning an HTML string in the inspector: %s, want Trusted Types to refuse it", got)
	}

	// The control: the same SVG behind a blob: URL of its own type, made in
	// the inspector's origin, does run when opened. This proves the probe
	// sees a script that runs, and is what the page must never make.
	ctl := eval[string](tb, `window.__makeBlobURL(new Blob([`+"`"+hostile("svg", "control")+"`"+`], {type: 'image/svg+xml'}))`)
	if title := openAsDocument(t, probe, ctl); title != scriptRan {
		t.Fatalf("the control's script did not run (title %q): the probe cannot see a script run", title)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(in.rpc.all(), func(c rpcCall) bool { return c.Method == "xss/control" }) {
		if time.Now().After(deadline) {
			t.Fatal("the control's script never reached /rpc")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range in.rpc.all() {
		if strings.HasPrefix(c.Method, "xss/") && c.Method != "xss/control" {
			t.Errorf("a hostile blob's script called /rpc (%s)", c.Method)
		}
	}
}
