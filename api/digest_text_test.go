package api_test

import (
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// User text that is exactly a digest nobody uploaded is text: the run is
// admitted and completes. The all-zero digest is a typed error, not an
// internal one.
func TestDigestShapedText_IsTextAndTheZeroDigestIsInvalid(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, api.CreateSessionParams{})
	text := content.Sum([]byte("never uploaded")).String()
	run := e.start(t, id, text)
	e.waitStatus(t, id, run.RunID, core.StatusCompleted)

	zero := "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	resp := e.postOne(t, `{"jsonrpc":"2.0","id":1,"method":"blobs/missing","params":{"digests":["`+zero+`"]}}`)
	if resp.Error == nil || resp.Error.Kind() != api.KindInvalidParams {
		t.Fatalf("blobs/missing with the zero digest: %+v", resp.Error)
	}
	run = e.start(t, id, zero)
	e.waitStatus(t, id, run.RunID, core.StatusCompleted)
}
