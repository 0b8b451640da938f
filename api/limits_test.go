package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
)

// A batch of more than MaxBatch calls is refused whole: none of it runs.
func TestBatchTooLargeRunsNothing(t *testing.T) {
	e := newEnv(t)
	batch := func(n int, prefix string) string {
		calls := make([]string, n)
		for i := range calls {
			calls[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/create","params":{"sessionId":"%s-%d","model":{"providerId":"fake","apiKind":"chat_completions","model":"fake-1"}}}`, i, prefix, i)
		}
		return "[" + strings.Join(calls, ",") + "]"
	}
	resp := e.postOne(t, batch(api.MaxBatch+1, "over"))
	if resp.Error == nil || resp.Error.Kind() != api.KindBatchTooLarge || string(resp.ID) != "null" {
		t.Fatalf("a batch of %d: %+v, want one batch_too_large error", api.MaxBatch+1, resp)
	}
	list, err := e.c.ListSessions(bg, api.SessionListParams{})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("the refused batch created sessions: %d, %v", len(list.Sessions), err)
	}
	status, _, data := e.post(t, batch(api.MaxBatch, "full"))
	var out []api.Response
	if err := json.Unmarshal(data, &out); status != http.StatusOK || err != nil || len(out) != api.MaxBatch {
		t.Fatalf("a batch of %d: HTTP %d, %d responses, %v", api.MaxBatch, status, len(out), err)
	}
	for _, r := range out {
		if r.Error != nil {
			t.Fatalf("a call of the full batch failed: %+v", r.Error)
		}
	}
}

// One small request must not make the server build a huge response: the
// results of a batch share one budget, and those past it are refused with
// response_too_large while the others (and small results after them) come.
func TestResponseBudgetBoundsABatch(t *testing.T) {
	const limit = 1 << 20
	e := newEnvWith(t, api.ServerOptions{MaxResponseBytes: limit})
	big := bytes.Repeat([]byte("0123456789abcdef"), (400<<10)/16) // 400 KiB: 546 KB in base64
	put, err := e.c.PutBlob(bg, big, "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	sid := e.create(t, api.CreateSessionParams{})
	calls := make([]string, 0, 41)
	for i := range 40 {
		calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"blobs/read","params":{"ref":"%s"}}`, i, put.Ref.Digest))
	}
	calls = append(calls, `{"jsonrpc":"2.0","id":"last","method":"session/read","params":{"sessionId":"`+sid+`"}}`)
	status, _, data := e.post(t, "["+strings.Join(calls, ",")+"]")
	if status != http.StatusOK {
		t.Fatalf("HTTP %d: %.300s", status, data)
	}
	if len(data) > limit+64<<10 {
		t.Fatalf("the response is %d bytes, limit %d", len(data), limit)
	}
	var out []api.Response
	if err := json.Unmarshal(data, &out); err != nil || len(out) != 41 {
		t.Fatalf("%d responses, %v", len(out), err)
	}
	if out[0].Error != nil {
		t.Fatalf("the first read fits and failed: %+v", out[0].Error)
	}
	for _, r := range out[1:40] {
		if r.Error == nil || r.Error.Kind() != api.KindResponseTooLarge {
			t.Fatalf("read %s past the budget: %+v, want response_too_large", r.ID, r.Error)
		}
	}
	if last := out[40]; last.Error != nil || len(last.Result) == 0 {
		t.Fatalf("a small result after the refused ones: %+v", last)
	}

	// One blob larger than the limit: refused whole, read in parts.
	huge := bytes.Repeat([]byte{'x'}, 3<<20)
	hp, err := e.c.PutBlob(bg, huge, "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.ReadBlob(bg, api.BlobReadParams{Ref: api.DigestRef(hp.Ref.Digest)})
	if rpcErr := wantKind(t, err, api.KindResponseTooLarge); !strings.Contains(rpcErr.Message, "offset and length") {
		t.Fatalf("the refusal does not say how to read it: %s", rpcErr.Message)
	}
	got, err := e.c.Get(bg, hp.Ref.Digest)
	if err != nil || !bytes.Equal(got, huge) {
		t.Fatalf("Client.Get of a blob past the limit: %d bytes, %v", len(got), err)
	}
}

// blobs/read takes offset and length, answers the blob's size, and refuses
// what cannot be read.
func TestBlobReadRange(t *testing.T) {
	e := newEnv(t)
	put, err := e.c.PutBlob(bg, []byte("0123456789"), "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	d := put.Ref.Digest
	n := func(v int64) *int64 { return &v }
	cases := []struct {
		offset int64
		length *int64
		want   string
	}{
		{0, nil, "0123456789"},
		{3, nil, "3456789"},
		{3, n(4), "3456"},
		{8, n(100), "89"},
		{10, nil, ""},
		{0, n(0), ""},
	}
	for _, tc := range cases {
		got, err := e.c.ReadBlob(bg, api.BlobReadParams{Ref: api.DigestRef(d), Offset: tc.offset, Length: tc.length})
		if err != nil || string(got.Data) != tc.want || got.Size != 10 {
			t.Fatalf("offset %d length %v: %q size %d, %v; want %q size 10", tc.offset, tc.length, got.Data, got.Size, err, tc.want)
		}
	}
	for _, p := range []api.BlobReadParams{{Ref: api.DigestRef(d), Offset: -1}, {Ref: api.DigestRef(d), Length: n(-1)}, {Ref: api.DigestRef(d), Offset: 11}} {
		_, err := e.c.ReadBlob(bg, p)
		wantKind(t, err, api.KindInvalidParams)
	}
}
