package runtime_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

type picture struct{}

func (picture) Definition() provider.Tool { return provider.Tool{Name: "picture"} }
func (picture) Invoke(context.Context, runtime.ToolEnv, json.RawMessage) (runtime.ToolOutput, error) {
	return runtime.ToolOutput{Parts: []runtime.ToolOutputPart{
		{MediaType: content.MediaText, Data: []byte("a chart")},
		{MediaType: "image/png", Data: []byte("\x89PNG fake")},
	}}, nil
}

// A result of several parts is a parts record naming each blob part, and
// the record holds its parts against collection (a retention edge).
func TestInvokeToolStoresParts(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	files := store.NewMemory(blobs)
	tools, err := runtime.NewTools(picture{})
	if err != nil {
		t.Fatal(err)
	}
	x := &runtime.Executor{Blobs: blobs, Tools: tools, Files: files}
	args, _ := blob.PutRef(ctx, blobs, []byte(`{}`), content.MediaJSON, "")
	res, err := x.InvokeTool(ctx, runtime.ToolSession{ID: "s"}, "r", 1, core.ToolCall{CallID: "c", Name: "picture", Arguments: args})
	if err != nil || res.Status != core.CallOK || !core.IsParts(res.Result.Content) {
		t.Fatalf("InvokeTool = %+v, %v; want a parts record", res, err)
	}
	data, err := blobs.Get(ctx, res.Result.Content.Digest)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := core.DecodeParts(data)
	if err != nil || len(parts) != 2 || parts[0].Text != "a chart" || parts[1].Ref == nil || parts[1].Ref.MediaType != "image/png" || parts[1].Bytes != 9 {
		t.Fatalf("parts %+v, %v", parts, err)
	}
	kids, err := files.Children(ctx, res.Result.Content.Digest)
	if err != nil || !slices.Equal(kids, []content.Digest{parts[1].Ref.Digest}) {
		t.Fatalf("the record's edges %v (%v); want its image", kids, err)
	}
	if res.Result.Preview != "a chart\n[image/png, 9 bytes: not shown]" {
		t.Fatalf("preview %q", res.Result.Preview)
	}
}
