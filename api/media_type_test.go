package api_test

import (
	"testing"

	"github.com/cairn-agents/cairn/api"
)

// A media type is checked before it is stored or sent: in blobs/put and in
// any ref object a client passes.
func TestMediaTypesAreValidated(t *testing.T) {
	e := newEnv(t)
	for _, mt := range []string{"text/plain\r\nX-Injected: 1", "text", "image/svg+xml; charset", "a b/c"} {
		wantKind(t, e.c.Call(bg, api.MethodBlobsPut, map[string]any{"data": "eA==", "mediaType": mt}, nil), api.KindInvalidParams)
	}
	put, err := e.c.PutBlob(bg, []byte("x"), "text/plain; charset=utf-8")
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]any{"digest": put.Ref.Digest.String(), "mediaType": "text/plain\x00"}
	wantKind(t, e.c.Call(bg, api.MethodBlobsRead, map[string]any{"ref": bad}, nil), api.KindInvalidParams)
}
