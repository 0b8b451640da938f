package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// DecodeError says why a response body could not be decoded.
type DecodeError = provider.DecodeError

// response is one Messages response: its facts and its content blocks. The
// blocks are kept as bytes; nothing passes through a struct.
type response struct {
	id          string
	stopReason  string
	stopDetails []byte // raw, or nil
	usage       core.Usage
	blocks      []block
}

// usageFacts holds the usage members the core keeps.
type usageFacts struct {
	InputTokens         count `json:"input_tokens"`
	OutputTokens        count `json:"output_tokens"`
	CacheReadTokens     count `json:"cache_read_input_tokens"`
	CacheCreationTokens count `json:"cache_creation_input_tokens"`
	OutputDetails       *struct {
		ThinkingTokens count `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// count is a token count that tolerates null and a float spelling, as
// compatible proxies are not all careful about either.
type count int64

func (c *count) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*c = count(n)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("a token count is not a number") // the value is not quoted: errors never carry body bytes
	}
	*c = count(f)
	return nil
}

// parseResponse splits a response body into facts and raw blocks.
func parseResponse(body []byte) (response, error) {
	ms, err := rawjson.ObjectMembers(body)
	if err != nil {
		return response{}, &DecodeError{API: "anthropic", Reason: "response is not a JSON object", Err: err}
	}
	if t, ok := rawjson.String(rawjson.Lookup(ms, "type")); ok && t != "message" {
		return response{}, &DecodeError{API: "anthropic", Reason: fmt.Sprintf("response type %q, want \"message\"", t)}
	}
	contentV := rawjson.Lookup(ms, "content")
	if rawjson.IsNull(contentV) {
		return response{}, &DecodeError{API: "anthropic", Reason: "response has no content array"}
	}
	elems, err := rawjson.ArrayElements(contentV)
	if err != nil {
		return response{}, &DecodeError{API: "anthropic", Reason: "content", Err: err}
	}
	r := response{}
	r.id, _ = rawjson.String(rawjson.Lookup(ms, "id"))
	r.stopReason, _ = rawjson.String(rawjson.Lookup(ms, "stop_reason"))
	if d := rawjson.Lookup(ms, "stop_details"); !rawjson.IsNull(d) {
		r.stopDetails = d
	}
	if u := rawjson.Lookup(ms, "usage"); !rawjson.IsNull(u) {
		var f usageFacts
		if err := json.Unmarshal(u, &f); err != nil {
			return response{}, &DecodeError{API: "anthropic", Reason: "usage", Err: err}
		}
		// InputTokens counts every prompt token. Anthropic reports the cached
		// and cache-written parts beside input_tokens, not inside it; adding
		// them keeps CachedInputTokens ≤ InputTokens as for the OpenAI kinds.
		r.usage = core.Usage{
			InputTokens:       int64(f.InputTokens + f.CacheReadTokens + f.CacheCreationTokens),
			OutputTokens:      int64(f.OutputTokens),
			CachedInputTokens: int64(f.CacheReadTokens),
			CacheWriteTokens:  int64(f.CacheCreationTokens),
		}
		if f.OutputDetails != nil {
			r.usage.ReasoningTokens = int64(f.OutputDetails.ThinkingTokens)
		}
	}
	for i, e := range elems {
		b, _, err := parseBlock(e)
		if err != nil {
			return response{}, &DecodeError{API: "anthropic", Reason: fmt.Sprintf("content[%d]", i), Err: err}
		}
		r.blocks = append(r.blocks, b)
	}
	return r, nil
}

// Decode stores one non-streaming Messages response body in blobs and
// returns its entries and facts. See the package comment for the blob
// formats. A pause_turn response decodes like any other (Finish
// "pause_turn"); continuing it is Generate's business.
func Decode(ctx context.Context, blobs blob.Store, body []byte) (provider.Output, error) {
	r, err := parseResponse(body)
	if err != nil {
		return provider.Output{}, err
	}
	return decodeTurn(ctx, blobs, []response{r}, turnInfo{})
}

// turnInfo is what the request side knows that the responses do not.
type turnInfo struct {
	maxTokens      int64 // the max_tokens sent, 0 when unknown
	pauseExhausted bool  // the last response paused and no continuation is left
}

// decodeTurn turns the responses of one generation (one, or a paused one and
// its continuations) into one output: their blocks in order, usage summed,
// the last response's id and stop reason.
func decodeTurn(ctx context.Context, blobs blob.Store, rs []response, info turnInfo) (provider.Output, error) {
	last := rs[len(rs)-1]
	out := provider.Output{ResponseID: last.id, Finish: last.stopReason}
	var blocks []block
	for _, r := range rs {
		out.Usage.InputTokens += r.usage.InputTokens
		out.Usage.OutputTokens += r.usage.OutputTokens
		out.Usage.CachedInputTokens += r.usage.CachedInputTokens
		out.Usage.CacheWriteTokens += r.usage.CacheWriteTokens
		out.Usage.ReasoningTokens += r.usage.ReasoningTokens
		blocks = append(blocks, r.blocks...)
	}

	failure := failureFor(last, len(blocks), info)
	if failure != nil {
		ref, err := blob.PutRef(ctx, blobs, []byte(failure.text), content.MediaText, "")
		if err != nil {
			return provider.Output{}, fmt.Errorf("anthropic: store failure text: %w", err)
		}
		out.Failure = &core.Failure{Kind: failure.kind, Message: failure.message, Ref: &ref}
		if last.stopReason == stopRefusal {
			// Anthropic: "reset the conversation context by removing or
			// updating the turn that was refused before continuing". Nothing
			// of a refused turn may be re-sent, so nothing enters context.
			return out, nil
		}
		blocks = withoutUnfinishedCalls(blocks)
	}

	entries, calls, err := entriesFromBlocks(ctx, blobs, blocks)
	if err != nil {
		return provider.Output{}, err
	}
	out.Entries, out.ToolCalls = entries, calls
	return out, nil
}

// withoutUnfinishedCalls drops what a failed turn cannot re-send: client
// tool_use blocks (they will get no tool_result; the core would drop their
// entries anyway) and server or MCP tool uses whose result block never came
// (the API rejects a server_tool_use without its result in the same message).
func withoutUnfinishedCalls(blocks []block) []block {
	answered := map[string]bool{}
	for _, b := range blocks {
		if ms, err := rawjson.ObjectMembers(b.raw); err == nil {
			if id, ok := rawjson.String(rawjson.Lookup(ms, "tool_use_id")); ok {
				answered[id] = true
			}
		}
	}
	var kept []block
	for _, b := range blocks {
		switch b.typ {
		case typeToolUse:
			continue
		case "server_tool_use", "mcp_tool_use":
			ms, _ := rawjson.ObjectMembers(b.raw)
			if id, _ := rawjson.String(rawjson.Lookup(ms, "id")); !answered[id] {
				continue
			}
		}
		kept = append(kept, b)
	}
	return kept
}

// entriesFromBlocks stores blocks as entries, in order: a run of text blocks
// is one entry, every other block its own.
func entriesFromBlocks(ctx context.Context, blobs blob.Store, blocks []block) ([]core.EntryInput, []core.ToolCall, error) {
	var (
		entries []core.EntryInput
		calls   []core.ToolCall
		run     []block
	)
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		var buf bytes.Buffer
		buf.WriteByte('[')
		for i, b := range run {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(b.raw)
		}
		buf.WriteByte(']')
		run = nil
		text, err := ProjectText(buf.Bytes())
		if err != nil {
			return err
		}
		e, err := putEntry(ctx, blobs, buf.Bytes(), ProviderKindText, core.EntryMessage, text)
		if err != nil {
			return err
		}
		entries = append(entries, e)
		return nil
	}

	for i, b := range blocks {
		if b.typ == typeText {
			run = append(run, b)
			continue
		}
		if err := flush(); err != nil {
			return nil, nil, err
		}
		var (
			e   core.EntryInput
			err error
		)
		switch b.typ {
		case typeThinking:
			text, _ := ProjectReasoning(b.raw)
			e, err = putEntry(ctx, blobs, b.raw, ProviderKindThinking, core.EntryReasoning, text)
		case typeRedactedThinking:
			e, err = putEntry(ctx, blobs, b.raw, ProviderKindRedactedThinking, core.EntryReasoning, "(redacted thinking)")
		case typeToolUse:
			var call core.ToolCall
			e, call, err = decodeToolUse(ctx, blobs, b)
			if err != nil {
				return nil, nil, &DecodeError{API: "anthropic", Reason: fmt.Sprintf("content[%d] (tool_use)", i), Err: err}
			}
			calls = append(calls, call)
		default:
			e, err = putEntry(ctx, blobs, b.raw, ProviderKindBlock, core.EntryProviderOpaque, opaquePreview(b))
		}
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, e)
	}
	if err := flush(); err != nil {
		return nil, nil, err
	}
	return entries, calls, nil
}

// decodeToolUse stores a tool_use block and its input.
func decodeToolUse(ctx context.Context, blobs blob.Store, b block) (core.EntryInput, core.ToolCall, error) {
	ms, err := rawjson.ObjectMembers(b.raw)
	if err != nil {
		return core.EntryInput{}, core.ToolCall{}, err
	}
	id, ok := rawjson.String(rawjson.Lookup(ms, "id"))
	if !ok || id == "" {
		return core.EntryInput{}, core.ToolCall{}, fmt.Errorf("missing id")
	}
	name, ok := rawjson.String(rawjson.Lookup(ms, "name"))
	if !ok || name == "" {
		return core.EntryInput{}, core.ToolCall{}, fmt.Errorf("missing name")
	}
	input := rawjson.Lookup(ms, "input")
	if rawjson.IsNull(input) {
		input = []byte("{}") // a call without input is a call with an empty object
	}
	argsRef, err := blob.PutRef(ctx, blobs, input, content.MediaJSON, "")
	if err != nil {
		return core.EntryInput{}, core.ToolCall{}, fmt.Errorf("store input: %w", err)
	}
	e, err := putEntry(ctx, blobs, b.raw, ProviderKindToolUse, core.EntryToolCall, name+"("+string(input)+")")
	if err != nil {
		return core.EntryInput{}, core.ToolCall{}, err
	}
	e.CallID, e.ToolName = id, name
	return e, core.ToolCall{CallID: id, Name: name, Arguments: argsRef}, nil
}

// opaquePreview names an opaque block for display: its type, and the tool
// name and input of a server tool use.
func opaquePreview(b block) string {
	ms, err := rawjson.ObjectMembers(b.raw)
	if err != nil {
		return b.typ
	}
	p := b.typ
	if name, ok := rawjson.String(rawjson.Lookup(ms, "name")); ok {
		p += " " + name
	}
	if in := rawjson.Lookup(ms, "input"); !rawjson.IsNull(in) {
		p += " " + string(in)
	}
	return p
}

// putEntry stores native bytes and describes them as an assistant entry.
func putEntry(ctx context.Context, blobs blob.Store, data []byte, providerKind, kind, preview string) (core.EntryInput, error) {
	ref, err := blob.PutRef(ctx, blobs, data, content.MediaJSON, providerKind)
	if err != nil {
		return core.EntryInput{}, fmt.Errorf("anthropic: store %s: %w", providerKind, err)
	}
	return core.EntryInput{
		Kind:          kind,
		Role:          core.RoleAssistant,
		Content:       ref,
		TokenEstimate: provider.Estimate(data),
		Preview:       provider.Preview(preview),
	}, nil
}
