package web

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser tests drive a real headless Chromium against an instance
// served in-process. One browser serves the whole package; each test gets
// its own browser context (its own storage) and tab.

// browserTimeout bounds each test's browser work.
const browserTimeout = 45 * time.Second

// viewport is a common laptop screen.
const viewportW, viewportH = 1440, 900

var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	os.Exit(code)
}

// chromiumPath finds a Chromium-family browser on PATH.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func startBrowser(path string) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(viewportW, viewportH),
		// Containers run tests as root, where Chromium's sandbox cannot start.
		chromedp.NoSandbox,
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	browser.ctx = ctx
	browser.cancel = func() { cancel(); cancelAlloc() }
	browser.err = chromedp.Do(ctx) // starts the browser
}

// tab is one browser tab of a test, and the page errors it reported.
type tab struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

// newTab opens a tab in a fresh browser context. Without Chromium the test
// is skipped, or fails in CI, where the browser must be installed.
func newTab(t *testing.T) *tab {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium, chromium-browser or google-chrome on PATH; CI must install it (scripts/services.sh ensure_chromium)")
		}
		t.Skip("no chromium, chromium-browser or google-chrome on PATH")
	}
	browser.once.Do(func() { startBrowser(path) })
	if browser.err != nil {
		t.Fatalf("starting %s: %v", path, browser.err)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, browserTimeout)
	t.Cleanup(cancelTimeout)
	tb := &tab{t: t, ctx: ctx}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(viewportW, viewportH)); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	// Any uncaught exception or console error of the page fails the test.
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	console := chromedp.Events(ctx, runtime.ConsoleAPICalled)
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			tb.pageError(fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, msg))
		}
	}()
	go func() {
		for ev, err := range console {
			if err != nil {
				return
			}
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				tb.pageError("console.error: " + strings.Join(parts, " "))
			}
		}
	}()
	t.Cleanup(func() {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, e := range tb.errors {
			t.Errorf("page error: %s", e)
		}
	})
	return tb
}

func (tb *tab) pageError(msg string) {
	tb.mu.Lock()
	tb.errors = append(tb.errors, msg)
	tb.mu.Unlock()
}

func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v", err)
	}
}

func (tb *tab) open(url string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(url))
}

// wait polls a JavaScript condition until it is true.
func (tb *tab) wait(cond string) {
	tb.t.Helper()
	_, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
	if err != nil {
		tb.t.Fatalf("waiting for %s: %v", cond, err)
	}
}

func (tb *tab) click(css string) {
	tb.t.Helper()
	tb.do(chromedp.Click(chromedp.CSS(css), chromedp.NodeVisible))
}

func (tb *tab) key(keys string) {
	tb.t.Helper()
	tb.do(chromedp.KeyEvent(keys))
}

// eval evaluates JavaScript and decodes its value; a promise is awaited.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// artifactsDir is where screenshots go: $CAIRN_ARTIFACTS, or a directory
// under the system's temporary directory (never the source tree).
func artifactsDir(t *testing.T) string {
	dir := os.Getenv("CAIRN_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "cairn-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// shot writes a PNG of the viewport as a test artifact.
func (tb *tab) shot(name string) string {
	tb.t.Helper()
	png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(artifactsDir(tb.t), unsafeName.ReplaceAllString(tb.t.Name()+"-"+name, "_")+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s", path)
	return path
}

// setValue sets an input's value.
func setValue(css, value string) chromedp.Action[chromedp.Void] {
	return chromedp.SetValue(chromedp.CSS(css), value)
}
