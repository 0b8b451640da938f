package api_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store"
)

func TestRetentionCollectThenReadIsNotFound(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	log := store.NewMemory(blobs)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	host := local.New(local.Options{Log: log, Blobs: blobs, Executor: &runtime.Executor{Blobs: blobs}, Logger: quiet})
	if err := host.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Close)
	srv := httptest.NewServer(api.NewServer(host, api.ServerOptions{APIKinds: []string{core.APIChatCompletions}, Logger: quiet}).Handler())
	t.Cleanup(srv.Close)
	c := api.NewClient(srv.URL, nil)

	put, err := c.PutBlob(ctx, []byte("collect me"), "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CollectRetention(ctx, api.RetentionCollectParams{GraceMs: -1}); err == nil {
		t.Fatal("negative grace accepted")
	}
	// Within the grace: kept.
	st, err := c.CollectRetention(ctx, api.RetentionCollectParams{GraceMs: 3_600_000})
	if err != nil || st.RowsDeleted != 0 {
		t.Fatalf("collect within grace = %+v, %v", st, err)
	}
	// A dry run at grace 0 counts it and deletes nothing.
	st, err = c.CollectRetention(ctx, api.RetentionCollectParams{GraceMs: 0, DryRun: true})
	if err != nil || st.Candidates != 1 || st.RowsDeleted != 0 || st.UniversesScanned != 1 {
		t.Fatalf("dry run = %+v, %v", st, err)
	}
	if _, err := c.ReadBlob(ctx, api.BlobReadParams{Ref: api.DigestRef(put.Ref.Digest)}); err != nil {
		t.Fatalf("read after dry run: %v", err)
	}
	st, err = c.CollectRetention(ctx, api.RetentionCollectParams{GraceMs: 0})
	if err != nil || st.RowsDeleted != 1 || st.BytesFreed != int64(len("collect me")) {
		t.Fatalf("collect = %+v, %v", st, err)
	}
	_, err = c.ReadBlob(ctx, api.BlobReadParams{Ref: api.DigestRef(put.Ref.Digest)})
	var rpcErr *api.Error
	if !errors.As(err, &rpcErr) || rpcErr.Kind() != api.KindNotFound {
		t.Fatalf("read of a collected blob = %v, want not_found", err)
	}
}
