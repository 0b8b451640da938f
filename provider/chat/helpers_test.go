package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/payloads"
)

// payloadDir holds the shared recorded responses; they are read in place, never copied.
var payloadDir = payloads.Dir("chat")

func payloadFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(payloadDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no payloads under %s", payloadDir)
	}
	sort.Strings(files)
	return files
}

func readPayload(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(payloadDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// ctxBuilder plays the core's part in tests: it stores inputs and assigns ids.
type ctxBuilder struct {
	t       *testing.T
	blobs   blob.Store
	entries []core.Entry
	next    int
}

func newCtx(t *testing.T) *ctxBuilder {
	return &ctxBuilder{t: t, blobs: blob.NewMemory()}
}

func (b *ctxBuilder) add(in core.EntryInput, source string) core.Entry {
	b.next++
	e := core.Entry{
		ID: fmt.Sprintf("e%03d", b.next), Key: in.Key, Kind: in.Kind, Role: in.Role, Source: source,
		Content: in.Content, TokenEstimate: in.TokenEstimate, Preview: in.Preview,
		CallID: in.CallID, ToolName: in.ToolName,
	}
	b.entries = append(b.entries, e)
	return e
}

func (b *ctxBuilder) put(data []byte, media string) content.ContentRef {
	b.t.Helper()
	ref, err := blob.PutRef(context.Background(), b.blobs, data, media, "")
	if err != nil {
		b.t.Fatal(err)
	}
	return ref
}

func (b *ctxBuilder) instructions(key, text string) {
	b.add(core.EntryInput{Key: key, Kind: core.EntryInstructions, Content: b.put([]byte(text), content.MediaText)}, core.SourceAPI)
}

func (b *ctxBuilder) user(text string) {
	b.add(core.EntryInput{Kind: core.EntryMessage, Role: core.RoleUser, Content: b.put([]byte(text), content.MediaText)}, core.SourceUser)
}

func (b *ctxBuilder) toolResult(callID, name, text string) {
	b.add(core.EntryInput{Kind: core.EntryToolResult, Content: b.put([]byte(text), content.MediaText), CallID: callID, ToolName: name}, core.SourceTool)
}

// decode decodes a recorded response into this context, answering every tool
// call the way the runtime would.
func (b *ctxBuilder) decode(body []byte) (outEntries []core.Entry, calls []core.ToolCall) {
	b.t.Helper()
	out, err := Decode(context.Background(), b.blobs, body)
	if err != nil {
		b.t.Fatal(err)
	}
	for _, in := range out.Entries {
		outEntries = append(outEntries, b.add(in, core.SourceModel))
	}
	for _, c := range out.ToolCalls {
		b.toolResult(c.CallID, c.Name, `{"ok":true,"call":"`+c.CallID+`"}`)
	}
	return outEntries, out.ToolCalls
}

func (b *ctxBuilder) get(ref content.ContentRef) []byte {
	b.t.Helper()
	data, err := b.blobs.Get(context.Background(), ref.Digest)
	if err != nil {
		b.t.Fatal(err)
	}
	return data
}

// members decodes a JSON object into raw members (test-side, independent of rawjson.go).
func members(t *testing.T, raw []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %v: %s", err, raw)
	}
	return m
}

// canon canonicalises a JSON value; a missing value canonicalises as null.
func canon(t *testing.T, raw []byte) string {
	t.Helper()
	if len(raw) == 0 {
		return "null"
	}
	c, err := content.Canonical(raw)
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

// originalMessage returns choices[0].message of a recorded response.
func originalMessage(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var env struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &env); err != nil || len(env.Choices) == 0 {
		t.Fatalf("bad fixture: %v", err)
	}
	return members(t, env.Choices[0].Message)
}

// requestMessages parses a request body's messages as raw members.
func requestMessages(t *testing.T, body []byte) []map[string]json.RawMessage {
	t.Helper()
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request is not JSON: %v", err)
	}
	out := make([]map[string]json.RawMessage, len(req.Messages))
	for i, m := range req.Messages {
		out[i] = members(t, m)
	}
	return out
}
