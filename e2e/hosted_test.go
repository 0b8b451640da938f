package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
)

// The hosted mode as a user runs it: migrate, create universes, serve on
// PostgreSQL + S3; every request needs its universe's key.
func TestE2E_HostedModeOnPostgresAndS3(t *testing.T) {
	pg := testenv.PostgresURL(t)
	s3 := testenv.S3Server(t)
	fake := newFakeChat(t, fakeKey)
	fake.script(fakeStep{body: textResponse("chatcmpl-h1", "Hosted hello.")})
	dir := t.TempDir()
	cfg := writeProviderConfig(t, dir, fake)
	env := []string{"CAIRN_POSTGRES=" + pg}

	// A server refuses a database that was never migrated.
	if out, err := runCairn(t, env, "serve", "--listen", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "cairn migrate") {
		t.Fatalf("serve on an unmigrated database: %v\n%s", err, out)
	}
	if _, err := runCairn(t, env, "migrate"); err != nil {
		t.Fatal(err)
	}
	keyA := createUniverse(t, env, "acme")
	keyB := createUniverse(t, env, "globex")

	srv := startServeWith(t, []string{"--config", cfg, "--s3-endpoint", s3.Endpoint, "--s3-bucket", s3.Bucket, "--s3-prefix", s3.Prefix},
		append(env, "FAKE_CHAT_KEY="+fakeKey, "AWS_ACCESS_KEY_ID="+s3.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3.SecretKey)...)
	ctx := context.Background()
	if status, body := probe(t, srv.addr, "/readyz"); status != http.StatusOK || checksOf(body) != "store=ok objects=ok" {
		t.Fatalf("/readyz without a key: %d %v", status, body)
	}
	// /metrics counts every universe's work: beside the API it needs a key.
	if status, _ := scrape(t, srv.addr, ""); status != http.StatusUnauthorized {
		t.Fatalf("/metrics without a key: HTTP %d", status)
	}
	if status, text := scrape(t, srv.addr, keyB); status != http.StatusOK || !strings.Contains(text, "cairn_runs_total") || !strings.Contains(text, "cairn_blob_bytes ") {
		t.Fatalf("/metrics with a key: HTTP %d", status)
	}

	// Without a key, or with an unknown one: 401 and nothing happens.
	resp, err := http.Post("http://"+srv.addr+"/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"session/create","params":{"sessionId":"x","model":{"providerId":"fake","apiKind":"chat_completions","model":"m"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: HTTP %d", resp.StatusCode)
	}
	if _, err := srv.client().WithAPIKey("cairn_not-a-key").ListSessions(ctx, api.SessionListParams{}); kindOf(err) != api.KindUnauthorized {
		t.Fatalf("unknown key: %v", err)
	}

	a := srv.client().WithAPIKey(keyA)
	created, err := a.CreateSession(ctx, api.CreateSessionParams{SessionID: "notes", Model: fakeModel()})
	if err != nil {
		t.Fatal(err)
	}
	run, err := a.StartRun(ctx, api.RunStartParams{SessionID: created.SessionID, Input: []api.InputPart{{Type: "text", Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitRun(t, a, created.SessionID, run.RunID); got.Status != core.StatusCompleted || got.Output.VisibleText() != "Hosted hello." {
		t.Fatalf("run = %s", mustJSON(t, got))
	}

	// A blob over 64 KiB goes to S3 and reads back; the other universe
	// cannot read it, nor see the session, even knowing both names.
	big := bytes.Repeat([]byte("acorn "), 20_000)
	put, err := a.PutBlob(ctx, big, "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.ReadBlob(ctx, api.BlobReadParams{Ref: api.DigestRef(put.Ref.Digest)})
	if err != nil || !bytes.Equal(got.Data, big) {
		t.Fatalf("reading the large blob back: %v", err)
	}
	b := srv.client().WithAPIKey(keyB)
	if _, err := b.ReadBlob(ctx, api.BlobReadParams{Ref: api.DigestRef(put.Ref.Digest)}); kindOf(err) != api.KindNotFound {
		t.Fatalf("universe globex read acme's blob: %v", err)
	}
	if _, err := b.ReadSession(ctx, "notes"); kindOf(err) != api.KindNotFound {
		t.Fatalf("universe globex saw acme's session: %v", err)
	}

	// Rotating acme's key: add one, revoke the first; the running server
	// refuses the revoked key at once and serves the new one.
	out, err := runCairn(t, env, "universe", "key", "add", "acme")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	keyA2 := lines[len(lines)-1]
	if out, err := runCairn(t, env, "universe", "key", "revoke", "acme", keyA); err != nil || !strings.Contains(out, "revoked") {
		t.Fatalf("key revoke: %v\n%s", err, out)
	}
	if _, err := a.ReadSession(ctx, "notes"); kindOf(err) != api.KindUnauthorized {
		t.Fatalf("a revoked key: %v", err)
	}
	if _, err := srv.client().WithAPIKey(keyA2).ReadSession(ctx, "notes"); err != nil {
		t.Fatalf("the new key: %v", err)
	}
	if out, err := runCairn(t, env, "universe", "key", "list", "acme"); err != nil || strings.Count(strings.TrimSpace(out), "\n") != 1 {
		t.Fatalf("key list after rotation: %v\n%s", err, out)
	}
}

// createUniverse runs `cairn universe create` and returns the key printed
// alone on its last line.
func createUniverse(t *testing.T, env []string, slug string) string {
	t.Helper()
	out, err := runCairn(t, env, "universe", "create", slug)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	if !strings.HasPrefix(key, "cairn_") || strings.Contains(key, " ") {
		t.Fatalf("last line of universe create is not a key: %q", key)
	}
	return key
}

func kindOf(err error) string {
	var rpcErr *api.Error
	if errors.As(err, &rpcErr) {
		return rpcErr.Kind()
	}
	return fmt.Sprint(err)
}
