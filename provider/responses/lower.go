package responses

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// LowerOptions shape a request beyond what the provider.Request says.
type LowerOptions struct {
	// Compaction marks a request built for a compaction call. Such a request
	// never carries prompt_cache_key: its material differs from the session's
	// generation requests, and sending it under the session's key would only
	// compete with the generation prefix for the cache the key routes to. Nor
	// does it carry context_management: a compaction call does not ask for
	// compaction. (The standalone compact endpoint's body is built by
	// LowerCompact, which follows the same rule.)
	Compaction bool
	// Stream asks for the response as a stream (endpoint.Endpoint.Stream),
	// unless the session's parameters say "stream": false.
	Stream bool
}

// UnsupportedEntryError: an entry this API kind cannot express.
type UnsupportedEntryError struct {
	EntryID string
	Kind    string
	Reason  string
}

func (e *UnsupportedEntryError) Error() string {
	return fmt.Sprintf("responses: cannot lower entry %s (kind %s): %s", e.EntryID, e.Kind, e.Reason)
}

// Lower builds the Responses request body for req. It only reads blobs; the
// result is a pure function of the entries' bytes, the tools, the params and
// opts, so the same context always gives the same body, and a context that
// only grew at its tail gives an `input` array that starts with the previous
// request's `input` bytes.
//
// Body layout, in this order:
//
//	{"model", "instructions"?, "tools"?, "input", "include"?, "store",
//	 "prompt_cache_key"?, "temperature"?, "top_p"?, "max_output_tokens"?,
//	 "reasoning"?, "service_tier"?, "parallel_tool_calls"?,
//	 "context_management"?, <extra…>}
//
// context_management is present only when req.Compaction has mode
// provider_triggered (see contextManagement); its bytes depend on the policy
// alone, so they are the same on every turn of a session.
//
// The members that stay the same from turn to turn (instructions, tools) come
// before `input`, so the body's byte prefix follows the order in which the
// provider renders the prompt. Input items: stored native items byte for
// byte; tool results as function_call_output; user messages and other text
// entries (catalogs, skill activations, summaries) as {"role":"user",
// "content":text}; a runtime-authored assistant text as role "assistant".
func Lower(ctx context.Context, blobs blob.Store, req provider.Request, opts LowerOptions) ([]byte, error) {
	body, _, err := lowerWithSegments(ctx, blobs, req, opts)
	return body, err
}

// lowerWithSegments is Lower that also cuts the request into its cache
// segments: each tool, the instructions, then each input item.
func lowerWithSegments(ctx context.Context, blobs blob.Store, req provider.Request, opts LowerOptions) ([]byte, []provider.Segment, error) {
	parts, segs, err := lowerParts(ctx, blobs, req, opts)
	if err != nil {
		return nil, nil, err
	}
	return bytes.Join(parts, nil), segs, nil
}

// lowerParts is lowerWithSegments with the body in parts: the framing and
// each input item's kept bytes, sent as they are (httpx.Call.Parts), so a
// long request is not copied into a fresh buffer every turn.
func lowerParts(ctx context.Context, blobs blob.Store, req provider.Request, opts LowerOptions) (net.Buffers, []provider.Segment, error) {
	if req.Model.Model == "" {
		return nil, nil, fmt.Errorf("responses: request has no model")
	}
	p, err := parseParams(req.Params)
	if err != nil {
		return nil, nil, err
	}
	scope := req.Pieces.Scope(APIKind, req, "")
	l, err := lowerEntryList(ctx, blobs, req.Entries, scope)
	if err != nil {
		return nil, nil, err
	}
	lead := make([]provider.Segment, 0, len(req.Tools)+1)
	for _, t := range req.Tools {
		var tb bytes.Buffer
		if err := writeTool(&tb, t); err != nil {
			return nil, nil, err
		}
		lead = append(lead, core.NewCacheSegment(core.SegmentTool, t.Name, tb.Bytes(), nil))
	}
	if l.instructions != nil {
		lead = append(lead, l.instructions.Segment)
	}
	segs := l.took.Segments(lead, l.items)
	if !l.scattered {
		scope.KeepPrefix(req.Entries, l.restart.Entry, l.items[:l.restart.Pieces], l.took, segs, len(lead))
	}

	var buf bytes.Buffer // the framing before the input items
	buf.WriteString(`{"model":`)
	rawjson.WriteString(&buf, req.Model.Model)
	if l.instructions != nil {
		buf.WriteString(`,"instructions":`)
		buf.Write(l.instructions.Raw)
	}
	if len(req.Tools) > 0 {
		buf.WriteString(`,"tools":[`)
		seen := make(map[string]bool, len(req.Tools))
		for i, t := range req.Tools {
			if seen[t.Name] {
				return nil, nil, fmt.Errorf("responses: tool %q is listed twice", t.Name)
			}
			seen[t.Name] = true
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeTool(&buf, t); err != nil {
				return nil, nil, err
			}
		}
		buf.WriteByte(']')
	}
	buf.WriteString(`,"input":[`)
	parts := make(net.Buffers, 0, 2*len(l.items)+2)
	parts = provider.AppendMembers(append(parts, buf.Bytes()), l.took.Members(), l.items)
	var tail bytes.Buffer
	tail.WriteByte(']')
	var cm []byte
	if !opts.Compaction {
		cm = contextManagement(req.Compaction)
	}
	p.write(&tail, provider.PromptCacheKey(req.SessionID), cm, opts)
	if opts.Stream && !p.noStream && !opts.Compaction {
		tail.WriteString(`,"stream":true`)
	}
	tail.WriteByte('}')
	return append(parts, tail.Bytes()), segs.Items(), nil
}

// write appends the parameter members of the body; contextMgmt, when not
// nil, is the context_management value.
func (p params) write(buf *bytes.Buffer, cacheKey string, contextMgmt []byte, opts LowerOptions) {
	include := p.include
	if include == nil {
		include = defaultInclude
	}
	if len(include) > 0 {
		buf.WriteString(`,"include":[`)
		for i, s := range include {
			if i > 0 {
				buf.WriteByte(',')
			}
			rawjson.WriteString(buf, s)
		}
		buf.WriteByte(']')
	}
	// store is always written: the API's default is true, and a session's
	// conversation must not be kept by the provider unless it asked.
	buf.WriteString(`,"store":` + strconv.FormatBool(p.store))
	if cacheKey != "" && !opts.Compaction {
		buf.WriteString(`,"prompt_cache_key":`)
		rawjson.WriteString(buf, cacheKey)
	}
	if p.temperature != nil {
		buf.WriteString(`,"temperature":`)
		buf.Write(p.temperature)
	}
	if p.topP != nil {
		buf.WriteString(`,"top_p":`)
		buf.Write(p.topP)
	}
	if p.maxOutputTokens > 0 {
		buf.WriteString(`,"max_output_tokens":` + strconv.FormatInt(p.maxOutputTokens, 10))
	}
	if p.reasoningEffort != "" || p.reasoningSummary != "" {
		buf.WriteString(`,"reasoning":{`)
		sep := ""
		if p.reasoningEffort != "" {
			buf.WriteString(`"effort":`)
			rawjson.WriteString(buf, p.reasoningEffort)
			sep = ","
		}
		if p.reasoningSummary != "" {
			buf.WriteString(sep + `"summary":`)
			rawjson.WriteString(buf, p.reasoningSummary)
		}
		buf.WriteByte('}')
	}
	if p.serviceTier != "" {
		buf.WriteString(`,"service_tier":`)
		rawjson.WriteString(buf, p.serviceTier)
	}
	if p.parallelToolCalls != nil {
		buf.WriteString(`,"parallel_tool_calls":` + strconv.FormatBool(*p.parallelToolCalls))
	}
	if contextMgmt != nil {
		buf.WriteString(`,"context_management":`)
		buf.Write(contextMgmt)
	}
	for _, m := range p.extra {
		if contextMgmt != nil && m.Name == "context_management" {
			// The session's compaction policy decides; a second member of
			// the same name would make the body ambiguous.
			continue
		}
		buf.WriteByte(',')
		buf.Write(m.RawName)
		buf.WriteByte(':')
		buf.Write(m.Value)
	}
}

// writeTool writes one function tool. strict is written as false: the
// Responses API defaults it to true, which rejects every schema that does not
// list all properties as required with additionalProperties false, and tool
// schemas here are written for any API kind.
func writeTool(buf *bytes.Buffer, t provider.Tool) error {
	if t.Name == "" {
		return fmt.Errorf("responses: tool without a name")
	}
	buf.WriteString(`{"type":"function","name":`)
	rawjson.WriteString(buf, t.Name)
	if t.Description != "" {
		buf.WriteString(`,"description":`)
		rawjson.WriteString(buf, t.Description)
	}
	buf.WriteString(`,"parameters":`)
	if len(bytes.TrimSpace(t.Parameters)) == 0 || string(bytes.TrimSpace(t.Parameters)) == "null" {
		// parameters is a required member; a tool without arguments takes an
		// empty object.
		buf.WriteString(`{"type":"object","properties":{}}`)
	} else {
		schema, err := rawjson.Compact(t.Parameters)
		if err != nil {
			return fmt.Errorf("responses: tool %q: parameters: %w", t.Name, err)
		}
		buf.Write(schema)
	}
	buf.WriteString(`,"strict":false}`)
	return nil
}

// lowerEntries returns the joined instructions as a JSON string (nil when
// there are none) and the input items, each as exact bytes, in context order.
func lowerEntries(ctx context.Context, blobs blob.Store, entries []core.Entry) ([]byte, [][]byte, error) {
	l, err := lowerEntryList(ctx, blobs, entries, nil)
	if err != nil {
		return nil, nil, err
	}
	items := make([][]byte, len(l.items))
	for i, it := range l.items {
		items[i] = it.Raw
	}
	if l.instructions == nil {
		return nil, items, nil
	}
	return l.instructions.Raw, items, nil
}

// loweredEntries are the joined instructions (nil when there are none)
// and the input items, each a piece: its bytes and cache segment. took is
// what the request took from the last request's kept prefix: items are
// the ones after its pieces.
type loweredEntries struct {
	instructions *provider.Piece
	items        []*provider.Piece
	took         provider.Kept
	restart      provider.Restart // for PieceScope.KeepPrefix
	// scattered: an instruction came after the leading ones; the request
	// keeps no prefix (lowerEntryList).
	scattered bool
}

// lowerEntryList lowers entries to the joined instructions and the input
// items. A piece an earlier request lowered from the same entries comes
// from pieces, without reading their blobs.
func lowerEntryList(ctx context.Context, blobs blob.Store, entries []core.Entry, pieces *provider.PieceScope) (loweredEntries, error) {
	load := func(e core.Entry) ([]byte, error) {
		data, err := blobs.Get(ctx, e.Content.Digest)
		if err != nil {
			return nil, fmt.Errorf("responses: entry %s: %w", e.ID, err)
		}
		return data, nil
	}

	var l loweredEntries
	// A request that starts with the last one's entries takes the items
	// lowered from them (provider.PieceScope.Prefix) and lowers the rest.
	l.took = pieces.Prefix(entries)
	// Instructions lead the context (provider.Request.Entries); a request
	// keeps its prefix only when none came later (scattered), so the
	// entries a kept prefix covers hold none beyond the leading ones, and
	// a long session's request does not look at each of its entries again.
	lead := 0
	for lead < len(entries) && entries[lead].Kind == core.EntryInstructions {
		lead++
	}
	system := entries[:lead:lead]
	for _, e := range entries[max(lead, l.took.Entries):] {
		if e.Kind == core.EntryInstructions {
			system = append(system, e)
			l.scattered = true
		}
	}
	if len(system) > 0 {
		it, ok := pieces.Lookup(system...)
		if !ok {
			texts := make([]string, len(system))
			for i, e := range system {
				text, err := entryText(e, load)
				if err != nil {
					return l, err
				}
				texts[i] = text
			}
			var b bytes.Buffer
			rawjson.WriteString(&b, strings.Join(texts, "\n\n"))
			it = pieces.Keep(core.SegmentInstructions, system, b.Bytes())
		}
		l.instructions = it
	}

	// restart is the last entry before which no reasoning item waits to
	// know what follows it, and before how many items came before it.
	restart, before := l.took.Entries, len(l.items)
	for i := l.took.Entries; i < len(entries); i++ {
		e := entries[i]
		if e.Kind == core.EntryInstructions {
			continue
		}
		if e.Content.ProviderKind == ProviderKindItem && e.Kind == core.EntryReasoning && !followedByItem(entries, i) {
			// The API rejects a reasoning item that is not immediately
			// followed by the item it preceded. That item is gone when the
			// generation failed (the core drops its tool calls) or context
			// was edited; re-sending the reasoning alone would make every
			// later request fail, so it is left out.
			continue
		}
		it, ok := pieces.Lookup(e)
		if !ok {
			raw, err := lowerItem(e, load)
			if err != nil {
				return l, err
			}
			it = pieces.Keep(e.Kind, []core.Entry{e}, raw)
		}
		l.items = append(l.items, it)
		if e.Kind != core.EntryReasoning {
			restart, before = i+1, len(l.items)
		}
	}
	l.restart = provider.Restart{Entry: restart, Pieces: before}
	return l, nil
}

// lowerItem lowers one entry that is not instructions to its input item.
func lowerItem(e core.Entry, load func(core.Entry) ([]byte, error)) ([]byte, error) {
	switch {
	case e.Content.ProviderKind == ProviderKindItem:
		data, err := load(e)
		if err != nil {
			return nil, err
		}
		if !isObject(data) {
			return nil, fmt.Errorf("responses: entry %s: stored item is not a JSON object", e.ID)
		}
		return data, nil // byte for byte, as stored

	case core.IsTranscript(e.Content) && e.Kind == core.EntryMessage:
		// A transcript of audio input: user text labelled with its file.
		data, err := load(e)
		if err != nil {
			return nil, err
		}
		rec, err := core.DecodeTranscript(data)
		if err != nil {
			return nil, fmt.Errorf("responses: entry %s: %w", e.ID, err)
		}
		var b bytes.Buffer
		b.WriteString(`{"role":"user","content":`)
		rawjson.WriteString(&b, rec.ModelText())
		b.WriteByte('}')
		return b.Bytes(), nil

	case e.Content.ProviderKind != "":
		return nil, &UnsupportedEntryError{e.ID, e.Kind, "provider kind " + e.Content.ProviderKind + " is not Responses material"}
	}
	return lowerPlain(e, load)
}

// followedByItem reports whether the reasoning entry at i is followed, past
// any further reasoning entries, by a native item: the material it belongs
// with. Instruction entries are not input items and are skipped.
func followedByItem(entries []core.Entry, i int) bool {
	for _, e := range entries[i+1:] {
		switch {
		case e.Kind == core.EntryInstructions:
			continue
		case e.Content.ProviderKind != ProviderKindItem:
			return false
		case e.Kind == core.EntryReasoning:
			continue
		default:
			return true
		}
	}
	return false
}

// lowerPlain lowers an entry that is not native material: a tool result or a
// text entry.
func lowerPlain(e core.Entry, load func(core.Entry) ([]byte, error)) ([]byte, error) {
	var b bytes.Buffer
	switch e.Kind {
	case core.EntryToolResult:
		if e.CallID == "" {
			return nil, &UnsupportedEntryError{e.ID, e.Kind, "tool result without a call id"}
		}
		if core.IsParts(e.Content) {
			return partsOutput(e, load)
		}
		if !content.IsText(e.Content.MediaType) && !isJSON(e.Content.MediaType) {
			return nil, &UnsupportedEntryError{e.ID, e.Kind, "tool result of media type " + e.Content.MediaType}
		}
		data, err := load(e)
		if err != nil {
			return nil, err
		}
		b.WriteString(`{"type":"` + itemFunctionCallOutput + `","call_id":`)
		rawjson.WriteString(&b, e.CallID)
		b.WriteString(`,"output":`)
		rawjson.WriteString(&b, string(data))
		b.WriteByte('}')
	case core.EntryMessage, core.EntryCatalog, core.EntrySkillActivation, core.EntrySummary:
		text, err := entryText(e, load)
		if err != nil {
			return nil, err
		}
		role := core.RoleUser
		if e.Kind == core.EntryMessage && e.Role == core.RoleAssistant {
			role = core.RoleAssistant
		}
		b.WriteString(`{"role":"` + role + `","content":`)
		rawjson.WriteString(&b, text)
		b.WriteByte('}')
	default:
		// tool_call, reasoning, compaction and provider_opaque entries only
		// exist as native items; without a Responses provider kind they came
		// from somewhere this API cannot replay.
		return nil, &UnsupportedEntryError{e.ID, e.Kind, "no Responses form for this kind without a native item"}
	}
	return b.Bytes(), nil
}

// entryText reads a text entry.
func entryText(e core.Entry, load func(core.Entry) ([]byte, error)) (string, error) {
	if e.Content.ProviderKind != "" {
		return "", &UnsupportedEntryError{e.ID, e.Kind, "provider kind " + e.Content.ProviderKind + " where text was expected"}
	}
	if !content.IsText(e.Content.MediaType) {
		return "", &UnsupportedEntryError{e.ID, e.Kind, "media type " + e.Content.MediaType + " is not text"}
	}
	data, err := load(e)
	if err != nil {
		return "", err
	}
	return string(data), nil
}

func isJSON(mediaType string) bool { return strings.HasPrefix(mediaType, "application/json") }

// isObject reports whether data is one valid JSON object.
func isObject(data []byte) bool {
	t := bytes.TrimSpace(data)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// partsOutput lowers a tool result of several parts to a
// function_call_output whose output is a list of input_text and
// input_image items (images as data URLs), in order; a part that is not
// an image is an input_text naming it.
func partsOutput(e core.Entry, load func(core.Entry) ([]byte, error)) ([]byte, error) {
	parts, err := provider.LoadParts(e, load)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"type":"` + itemFunctionCallOutput + `","call_id":`)
	rawjson.WriteString(&b, e.CallID)
	b.WriteString(`,"output":[`)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		if p.IsImage() {
			b.WriteString(`{"type":"input_image","image_url":"data:`)
			b.WriteString(p.MediaType)
			b.WriteString(`;base64,`)
			b.WriteString(base64.StdEncoding.EncodeToString(p.Data))
			b.WriteString(`"}`)
			continue
		}
		b.WriteString(`{"type":"input_text","text":`)
		rawjson.WriteString(&b, p.Shown())
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	return b.Bytes(), nil
}
