package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store"
)

// storageEnv is an embedded server over a memory host whose log can report
// storage (its blob store is the plain *blob.Memory).
func storageEnv(t *testing.T) (*api.Client, *store.Memory) {
	t.Helper()
	host, log := newUniverseHost(t)
	srv := httptest.NewServer(api.NewServer(host, api.ServerOptions{APIKinds: []string{core.APIChatCompletions},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	t.Cleanup(srv.Close)
	return api.NewClient(srv.URL, nil), log
}

func TestStorageReportPagesSessionsAndTotalsTheUniverse(t *testing.T) {
	ctx := context.Background()
	c, log := storageEnv(t)
	// s-a and s-b share their instructions; s-c has its own.
	for id, instr := range map[string]string{"s-a": "shared instructions", "s-b": "shared instructions", "s-c": "own instructions"} {
		if _, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: id, Model: testModel(), Instructions: instr}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := log.SessionUsage(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	wantUniverse, err := log.UniverseUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 || want[0].SharedBytes < int64(len("shared instructions")) || want[2].LogicalBytes-want[2].SharedBytes < int64(len("own instructions")) {
		t.Fatalf("store usage = %+v", want)
	}

	page, err := c.StorageReport(ctx, api.StorageReportParams{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if page.Universe == nil || *page.Universe != wantUniverse || !slices.Equal(page.Sessions, want[:2]) || page.Cursor != "s-b" {
		t.Fatalf("first page = %+v (universe %+v), want %+v, cursor s-b", page, page.Universe, want[:2])
	}
	page, err = c.StorageReport(ctx, api.StorageReportParams{After: page.Cursor, Limit: 2})
	if err != nil || !slices.Equal(page.Sessions, want[2:]) || page.Cursor != "" {
		t.Fatalf("last page = %+v, %v; want %+v and no cursor", page, err, want[2:])
	}
	page, err = c.StorageReport(ctx, api.StorageReportParams{SessionID: "s-b"})
	if err != nil || page.Universe != nil || !slices.Equal(page.Sessions, want[1:2]) || page.Cursor != "" {
		t.Fatalf("one session = %+v, %v; want only %+v", page, err, want[1])
	}

	// Bad requests are typed and change nothing.
	_, err = c.StorageReport(ctx, api.StorageReportParams{SessionID: "ghost"})
	wantKind(t, err, api.KindNotFound)
	_, err = c.StorageReport(ctx, api.StorageReportParams{SessionID: "s-a", Limit: 1})
	wantKind(t, err, api.KindInvalidParams)
	_, err = c.StorageReport(ctx, api.StorageReportParams{Limit: -1})
	wantKind(t, err, api.KindInvalidParams)
	if after, _ := log.UniverseUsage(ctx); after != wantUniverse {
		t.Fatalf("usage after rejected calls = %+v, want %+v", after, wantUniverse)
	}
}

// The wire shape: an empty universe still lists [] sessions, and a session
// report omits the universe.
func TestStorageReportWireShape(t *testing.T) {
	ctx := context.Background()
	c, _ := storageEnv(t)
	var raw json.RawMessage
	if err := c.Call(ctx, api.MethodStorageReport, map[string]any{}, &raw); err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if string(got["sessions"]) != "[]" || got["universe"] == nil || got["cursor"] != nil {
		t.Fatalf("empty report = %s", raw)
	}
	for _, key := range []string{"blobs", "physicalBytes", "inlineBytes", "objectBytes", "sessions", "roots", "logicalBytes", "events", "eventBytes"} {
		if !strings.Contains(string(got["universe"]), `"`+key+`":`) {
			t.Fatalf("universe %s lacks %s", got["universe"], key)
		}
	}
}

func TestBlobHoldersNamesHoldersAndEligibility(t *testing.T) {
	ctx := context.Background()
	c, _ := storageEnv(t)
	put, err := c.PutBlob(ctx, []byte("loose bytes"), "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	d := put.Ref.Digest
	h, err := c.BlobHolders(ctx, api.BlobHoldersParams{Ref: api.DigestRef(d)})
	if err != nil {
		t.Fatal(err)
	}
	if h.Ref.Digest != d || h.Size != int64(len("loose bytes")) || h.Storage != api.StorageInline || h.Held || h.Constant || h.Collectable ||
		h.GraceMs != retention.DefaultGrace.Milliseconds() || h.EligibleAtMs != h.TouchedAtMs+h.GraceMs {
		t.Fatalf("holders of a loose blob = %+v", h)
	}
	if h.TouchedAtMs > time.Now().UnixMilli() || h.TouchedAtMs < time.Now().Add(-time.Minute).UnixMilli() {
		t.Fatalf("touchedAtMs %d is not the put's time", h.TouchedAtMs)
	}
	time.Sleep(3 * time.Millisecond) // past touchedAt + 0
	zero := int64(0)
	h, err = c.BlobHolders(ctx, api.BlobHoldersParams{Ref: api.DigestRef(d), GraceMs: &zero})
	if err != nil || !h.Collectable || h.EligibleAtMs != h.TouchedAtMs || h.GraceMs != 0 {
		t.Fatalf("holders at grace 0 = %+v, %v; want collectable now", h, err)
	}

	// Instructions are a root of their session; the same bytes, the same blob.
	if _, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: "s1", Model: testModel(), Instructions: "loose bytes"}); err != nil {
		t.Fatal(err)
	}
	h, err = c.BlobHolders(ctx, api.BlobHoldersParams{Ref: api.DigestRef(d), GraceMs: &zero})
	if err != nil || !h.Held || h.Collectable || !slices.Equal(h.Sessions, []string{"s1"}) {
		t.Fatalf("holders of a rooted blob = %+v, %v", h, err)
	}
	var raw map[string]json.RawMessage
	if err := c.Call(ctx, api.MethodBlobsHolders, map[string]any{"ref": d}, &raw); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"sessions": `["s1"]`, "checkpoints": "[]", "workspaces": "[]", "parents": "[]", "snapshot": "false"} {
		if string(raw[key]) != want {
			t.Fatalf("%s = %s, want %s", key, raw[key], want)
		}
	}
	if raw["sessionsTruncated"] != nil {
		t.Fatalf("an uncut list reports truncation: %s", raw["sessionsTruncated"])
	}

	// The constant blobs are pinned, whoever holds them.
	constant := content.Sum(core.ConstantBlobs()[0])
	h, err = c.BlobHolders(ctx, api.BlobHoldersParams{Ref: api.DigestRef(constant), GraceMs: &zero})
	if err != nil || !h.Constant || !h.Held || h.Collectable {
		t.Fatalf("holders of a constant blob = %+v, %v", h, err)
	}

	// Bad requests are typed.
	_, err = c.BlobHolders(ctx, api.BlobHoldersParams{Ref: api.DigestRef(content.Sum([]byte("never put")))})
	wantKind(t, err, api.KindNotFound)
	err = c.Call(ctx, api.MethodBlobsHolders, map[string]any{}, nil) // no ref
	wantKind(t, err, api.KindInvalidParams)
	negative := int64(-1)
	_, err = c.BlobHolders(ctx, api.BlobHoldersParams{Ref: api.DigestRef(d), GraceMs: &negative})
	wantKind(t, err, api.KindInvalidParams)
	_, err = c.BlobHolders(ctx, api.BlobHoldersParams{Ref: api.DigestRef(d), Limit: -1})
	wantKind(t, err, api.KindInvalidParams)
	err = c.Call(ctx, api.MethodBlobsHolders, map[string]any{"ref": "sha256:nothex"}, nil)
	wantKind(t, err, api.KindInvalidParams)
}

// In the hosted mode both methods see the caller's universe only.
func TestStorageHostedReportsTheCallersUniverse(t *testing.T) {
	ctx := context.Background()
	hostA, _ := newUniverseHost(t)
	hostB, logB := newUniverseHost(t)
	hosts := &keyedHosts{byKey: map[string]api.Host{"key-a": hostA, "key-b": hostB}}
	srv := httptest.NewServer(api.NewServerFor(hosts, api.ServerOptions{APIKinds: []string{core.APIChatCompletions},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	t.Cleanup(srv.Close)
	a := api.NewClient(srv.URL, nil).WithAPIKey("key-a")
	b := api.NewClient(srv.URL, nil).WithAPIKey("key-b")
	if _, err := a.CreateSession(ctx, api.CreateSessionParams{SessionID: "only-in-a", Model: testModel(), Instructions: "a's secret"}); err != nil {
		t.Fatal(err)
	}
	ra, err := a.StorageReport(ctx, api.StorageReportParams{})
	if err != nil || len(ra.Sessions) != 1 || ra.Sessions[0].SessionID != "only-in-a" || ra.Universe.Sessions != 1 {
		t.Fatalf("a's report = %+v, %v", ra, err)
	}
	rb, err := b.StorageReport(ctx, api.StorageReportParams{})
	wantB, _ := logB.UniverseUsage(ctx)
	if err != nil || len(rb.Sessions) != 0 || rb.Universe == nil || *rb.Universe != wantB || wantB.Sessions != 0 {
		t.Fatalf("b's report = %+v, %v; want b's own empty universe %+v", rb, err, wantB)
	}
	_, err = b.StorageReport(ctx, api.StorageReportParams{SessionID: "only-in-a"})
	wantKind(t, err, api.KindNotFound)
	secret := content.Sum([]byte("a's secret"))
	if h, err := a.BlobHolders(ctx, api.BlobHoldersParams{Ref: api.DigestRef(secret)}); err != nil || !slices.Equal(h.Sessions, []string{"only-in-a"}) {
		t.Fatalf("a's holders = %+v, %v", h, err)
	}
	_, err = b.BlobHolders(ctx, api.BlobHoldersParams{Ref: api.DigestRef(secret)})
	wantKind(t, err, api.KindNotFound)
}

// A store that cannot report answers unsupported, not an internal error.
func TestStorageReportUnsupportedStore(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	log := struct{ store.SessionLog }{store.NewMemory(blobs)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	host := local.New(local.Options{Log: log, Blobs: blobs, Executor: &runtime.Executor{Blobs: blobs}, Logger: quiet})
	if err := host.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Close)
	srv := httptest.NewServer(api.NewServer(host, api.ServerOptions{APIKinds: []string{core.APIChatCompletions}, Logger: quiet}).Handler())
	t.Cleanup(srv.Close)
	c := api.NewClient(srv.URL, nil)
	_, err := c.StorageReport(ctx, api.StorageReportParams{})
	wantKind(t, err, api.KindUnsupported)
	_, err = c.BlobHolders(ctx, api.BlobHoldersParams{Ref: api.DigestRef(content.Sum(core.ConstantBlobs()[0]))})
	wantKind(t, err, api.KindUnsupported)
}

// Without graceMs, eligibility follows the server's collector grace.
func TestBlobHoldersDefaultsToTheServersGrace(t *testing.T) {
	ctx := context.Background()
	host, _ := newUniverseHost(t)
	srv := httptest.NewServer(api.NewServer(host, api.ServerOptions{APIKinds: []string{core.APIChatCompletions},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RetentionGrace: 2 * time.Hour}).Handler())
	t.Cleanup(srv.Close)
	c := api.NewClient(srv.URL, nil)
	put, err := c.PutBlob(ctx, []byte("graced bytes"), "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.BlobHolders(ctx, api.BlobHoldersParams{Ref: api.DigestRef(put.Ref.Digest)})
	if err != nil || h.GraceMs != (2*time.Hour).Milliseconds() || h.EligibleAtMs != h.TouchedAtMs+h.GraceMs {
		t.Fatalf("holders = %+v, %v; want the server's 2h grace", h, err)
	}
}
