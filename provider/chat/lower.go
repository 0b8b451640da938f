package chat

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// LowerOptions are the per-endpoint choices that shape a request.
type LowerOptions struct {
	// ReasoningField is endpoint.Endpoint.ReasoningField: the assistant
	// message field stored reasoning is re-sent under, or "" to not re-send it.
	ReasoningField string
	// Stream asks for the response as a stream, with its usage
	// (endpoint.Endpoint.Stream).
	Stream bool
}

// UnsupportedEntryError: an entry this API kind cannot express.
type UnsupportedEntryError struct {
	EntryID string
	Kind    string
	Reason  string
}

func (e *UnsupportedEntryError) Error() string {
	return fmt.Sprintf("chat: cannot lower entry %s (kind %s): %s", e.EntryID, e.Kind, e.Reason)
}

// Lower builds the Chat Completions request body for req. It only reads blobs;
// the result is a pure function of the entries' bytes, the tools and opts, so
// the same context always gives the same body, and a context that only grew at
// its tail gives a body that starts with the previous body's messages.
//
// Body layout: {"model","messages","tools"?,"prompt_cache_key"?}. Messages:
// every instruction entry joined by "\n\n" into one leading system message;
// assistant material folded into one assistant message per generation; tool
// results as role "tool"; any other text entry (user messages, catalogs, skill
// activations, summaries) as role "user", or "assistant" for a non-native
// assistant message.
func Lower(ctx context.Context, blobs blob.Store, req provider.Request, opts LowerOptions) ([]byte, error) {
	body, _, err := lowerWithSegments(ctx, blobs, req, opts)
	return body, err
}

// lowerWithSegments is Lower that also cuts the request into its cache
// segments: each tool, then each message (the system message is the
// instructions segment).
func lowerWithSegments(ctx context.Context, blobs blob.Store, req provider.Request, opts LowerOptions) ([]byte, []provider.Segment, error) {
	parts, segs, err := lowerParts(ctx, blobs, req, opts)
	if err != nil {
		return nil, nil, err
	}
	return bytes.Join(parts, nil), segs, nil
}

// lowerParts is lowerWithSegments with the body in parts, in order: its
// framing and each message's kept bytes, which are sent as they are
// (httpx.Call.Parts). Joining a request that carries 26 MB (100 copies
// of a 256 KiB file) cost a fresh 26 MB buffer a turn, zeroed and copied
// into, more than half of such a turn's CPU.
func lowerParts(ctx context.Context, blobs blob.Store, req provider.Request, opts LowerOptions) (net.Buffers, []provider.Segment, error) {
	if req.Model.Model == "" {
		return nil, nil, fmt.Errorf("chat: request has no model")
	}
	scope := req.Pieces.Scope(APIKind, req, opts.ReasoningField)
	lowered, took, restart, err := lowerMessageList(ctx, blobs, req.Entries, opts, scope)
	if err != nil {
		return nil, nil, err
	}
	tools := make([]provider.Segment, 0, len(req.Tools))
	for _, t := range req.Tools {
		var tb bytes.Buffer
		if err := writeTool(&tb, t); err != nil {
			return nil, nil, err
		}
		tools = append(tools, core.NewCacheSegment(core.SegmentTool, t.Name, tb.Bytes(), nil))
	}
	segs := took.Segments(tools, lowered)
	scope.KeepPrefix(req.Entries, restart.Entry, lowered[:restart.Pieces], took, segs, len(tools))
	// The messages the last request's kept prefix holds go as one part
	// (provider.Kept.Members), the rest one by one.
	parts := make(net.Buffers, 0, 2*len(lowered)+3)
	var head bytes.Buffer
	head.WriteString(`{"model":`)
	rawjson.WriteString(&head, req.Model.Model)
	head.WriteString(`,"messages":[`)
	parts = provider.AppendMembers(append(parts, head.Bytes()), took.Members(), lowered)
	var tail bytes.Buffer
	tail.WriteByte(']')
	if len(req.Tools) > 0 {
		tail.WriteString(`,"tools":[`)
		for i, t := range req.Tools {
			if i > 0 {
				tail.WriteByte(',')
			}
			if err := writeTool(&tail, t); err != nil {
				return nil, nil, err
			}
		}
		tail.WriteByte(']')
	}
	if key := provider.PromptCacheKey(req.SessionID); key != "" {
		tail.WriteString(`,"prompt_cache_key":`)
		rawjson.WriteString(&tail, key)
	}
	if opts.Stream {
		tail.WriteString(`,"stream":true,"stream_options":{"include_usage":true}`)
	}
	tail.WriteByte('}')
	return append(parts, tail.Bytes()), segs.Items(), nil
}

func writeTool(buf *bytes.Buffer, t provider.Tool) error {
	if t.Name == "" {
		return fmt.Errorf("chat: tool without a name")
	}
	buf.WriteString(`{"type":"function","function":{"name":`)
	rawjson.WriteString(buf, t.Name)
	if t.Description != "" {
		buf.WriteString(`,"description":`)
		rawjson.WriteString(buf, t.Description)
	}
	if len(bytes.TrimSpace(t.Parameters)) > 0 {
		params, err := rawjson.Compact(t.Parameters)
		if err != nil {
			return fmt.Errorf("chat: tool %q: parameters: %w", t.Name, err)
		}
		buf.WriteString(`,"parameters":`)
		buf.Write(params)
	}
	buf.WriteString(`}}`)
	return nil
}

// lowerMessages returns the request's messages, each as exact bytes.
func lowerMessages(ctx context.Context, blobs blob.Store, entries []core.Entry, opts LowerOptions) ([][]byte, error) {
	lowered, _, _, err := lowerMessageList(ctx, blobs, entries, opts, nil)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(lowered))
	for i, m := range lowered {
		out[i] = m.Raw
	}
	return out, nil
}

// lowerMessageList returns the request's messages after the ones it took
// from the last request's kept prefix (the Kept it returns), each a
// piece: its bytes and cache segment. A message an earlier request lowered
// from the same entries comes from pieces, without reading their blobs.
func lowerMessageList(ctx context.Context, blobs blob.Store, entries []core.Entry, opts LowerOptions, pieces *provider.PieceScope) ([]*provider.Piece, provider.Kept, provider.Restart, error) {
	load := func(e core.Entry) ([]byte, error) {
		data, err := blobs.Get(ctx, e.Content.Digest)
		if err != nil {
			return nil, fmt.Errorf("chat: entry %s: %w", e.ID, err)
		}
		return data, nil
	}
	var out []*provider.Piece // after the pieces taken
	add := func(m *provider.Piece) {
		if m.Raw != nil { // nil: the entries make no message
			out = append(out, m)
		}
	}

	// A request that starts with the last one's entries takes the pieces
	// lowered from them (provider.PieceScope.Prefix): the system message
	// among them, as long as no instruction follows.
	took := pieces.Prefix(entries)
	if took.Entries > 0 && slices.ContainsFunc(entries[took.Entries:], func(e core.Entry) bool { return e.Kind == core.EntryInstructions }) {
		took = provider.Kept{}
	}
	from := took.Entries

	// Instructions come first in the context; they become one system
	// message (among the pieces taken, when the prefix was).
	if from == 0 {
		if err := lowerInstructions(entries, pieces, load, add); err != nil {
			return nil, provider.Kept{}, provider.Restart{}, err
		}
	}

	var g group
	var src []core.Entry // the entries of the group being flushed
	flush := func() error {
		if g.phase == 0 {
			return nil
		}
		var kind string
		kind, src = g.sources(src[:0])
		m, ok := pieces.Lookup(src...)
		if !ok {
			raw, err := g.lower(load, opts)
			if err != nil {
				return err
			}
			m = pieces.Keep(kind, src, raw)
		}
		add(m)
		g = group{}
		return nil
	}

	// restart is the last entry before which lowering held no state, and
	// before how many pieces came before it: the next request may take
	// them and lower from there.
	restart, before := from, len(out)
	for i := from; i < len(entries); i++ {
		e := &entries[i] // groups point at entries; a copy per entry would escape
		if g.phase == 0 && e.Kind != core.EntryInstructions {
			restart, before = i, len(out)
		}
		pk := e.Content.ProviderKind
		switch {
		case e.Kind == core.EntryInstructions:
			continue
		case e.Kind == core.EntryReasoning:
			if pk != ProviderKindReasoning {
				return nil, provider.Kept{}, provider.Restart{}, &UnsupportedEntryError{e.ID, e.Kind, "reasoning of provider kind " + pk}
			}
			if g.phase >= phaseReasoning {
				if err := flush(); err != nil {
					return nil, provider.Kept{}, provider.Restart{}, err
				}
			}
			g.reasoning, g.phase = e, phaseReasoning
			continue
		case e.Kind == core.EntryMessage && pk == ProviderKindMessage:
			if g.phase >= phaseMessage {
				if err := flush(); err != nil {
					return nil, provider.Kept{}, provider.Restart{}, err
				}
			}
			g.message, g.phase = e, phaseMessage
			continue
		case e.Kind == core.EntryToolCall:
			if pk != ProviderKindToolCall {
				return nil, provider.Kept{}, provider.Restart{}, &UnsupportedEntryError{e.ID, e.Kind, "tool call of provider kind " + pk}
			}
			g.calls, g.phase = append(g.calls, *e), phaseCalls
			continue
		}

		if err := flush(); err != nil {
			return nil, provider.Kept{}, provider.Restart{}, err
		}
		m, ok := pieces.Lookup(*e)
		if !ok {
			raw, err := lowerPlain(*e, load)
			if err != nil {
				return nil, provider.Kept{}, provider.Restart{}, err
			}
			m = pieces.Keep(e.Kind, []core.Entry{*e}, raw)
		}
		add(m)
	}
	if err := flush(); err != nil {
		return nil, provider.Kept{}, provider.Restart{}, err
	}
	return out, took, provider.Restart{Entry: restart, Pieces: before}, nil
}

// lowerInstructions adds the system message of the request's instruction
// entries, if it has any.
func lowerInstructions(entries []core.Entry, pieces *provider.PieceScope, load func(core.Entry) ([]byte, error), add func(*provider.Piece)) error {
	var sources []core.Entry
	for i := range entries {
		if e := &entries[i]; e.Kind == core.EntryInstructions {
			sources = append(sources, *e)
		}
	}
	if len(sources) == 0 {
		return nil
	}
	m, ok := pieces.Lookup(sources...)
	if !ok {
		system := make([]string, len(sources))
		for i, e := range sources {
			text, err := entryText(e, load)
			if err != nil {
				return err
			}
			system[i] = text
		}
		var b bytes.Buffer
		b.WriteString(`{"role":"system","content":`)
		rawjson.WriteString(&b, strings.Join(system, "\n\n"))
		b.WriteByte('}')
		m = pieces.Keep(core.SegmentInstructions, sources, b.Bytes())
	}
	add(m)
	return nil
}

// lowerPlain lowers a non-native entry: a tool result or a text message.
func lowerPlain(e core.Entry, load func(core.Entry) ([]byte, error)) ([]byte, error) {
	if core.IsTranscript(e.Content) && e.Kind == core.EntryMessage {
		// A transcript of audio input: user text labelled with its file.
		data, err := load(e)
		if err != nil {
			return nil, err
		}
		rec, err := core.DecodeTranscript(data)
		if err != nil {
			return nil, fmt.Errorf("chat: entry %s: %w", e.ID, err)
		}
		var b bytes.Buffer
		b.WriteString(`{"role":"user","content":`)
		rawjson.WriteString(&b, rec.ModelText())
		b.WriteByte('}')
		return b.Bytes(), nil
	}
	if e.Content.ProviderKind != "" {
		return nil, &UnsupportedEntryError{e.ID, e.Kind, "provider kind " + e.Content.ProviderKind + " is not Chat Completions material"}
	}
	var b bytes.Buffer
	switch e.Kind {
	case core.EntryToolResult:
		if e.CallID == "" {
			return nil, &UnsupportedEntryError{e.ID, e.Kind, "tool result without a call id"}
		}
		if core.IsParts(e.Content) {
			return partsMessage(e, load)
		}
		data, err := load(e)
		if err != nil {
			return nil, err
		}
		if !content.IsText(e.Content.MediaType) && !strings.HasPrefix(e.Content.MediaType, "application/json") {
			return nil, &UnsupportedEntryError{e.ID, e.Kind, "tool result of media type " + e.Content.MediaType}
		}
		b.WriteString(`{"role":"tool","tool_call_id":`)
		rawjson.WriteString(&b, e.CallID)
		b.WriteString(`,"content":`)
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
		return nil, &UnsupportedEntryError{e.ID, e.Kind, "no Chat Completions form for this kind"}
	}
	return b.Bytes(), nil
}

// entryText reads a text entry.
func entryText(e core.Entry, load func(core.Entry) ([]byte, error)) (string, error) {
	if !content.IsText(e.Content.MediaType) {
		return "", &UnsupportedEntryError{e.ID, e.Kind, "media type " + e.Content.MediaType + " is not text"}
	}
	data, err := load(e)
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// Phases of a generation's entries, in the order Decode writes them.
const (
	phaseReasoning = 1 + iota
	phaseMessage
	phaseCalls
)

// group is the contiguous native material of one generation: an optional
// reasoning entry, an optional message, then its tool calls. Seeing an earlier
// phase again starts the next generation.
type group struct {
	phase     int
	reasoning *core.Entry
	message   *core.Entry
	calls     []core.Entry
}

// sources returns the segment kind of the group's message (message, or
// tool_call without a message) and the entries folded into it, appended to
// src.
func (g *group) sources(src []core.Entry) (string, []core.Entry) {
	kind := core.EntryToolCall
	if g.reasoning != nil {
		src = append(src, *g.reasoning)
	}
	if g.message != nil {
		src = append(src, *g.message)
		kind = core.EntryMessage
	}
	return kind, append(src, g.calls...)
}

// lower folds the group into one assistant message, or nil when it has nothing
// a request may carry (say, reasoning alone, or a message removed from context
// that left only its reasoning).
func (g *group) lower(load func(core.Entry) ([]byte, error), opts LowerOptions) ([]byte, error) {
	var msg []rawjson.Member
	if g.message != nil {
		data, err := load(*g.message)
		if err != nil {
			return nil, err
		}
		if msg, err = rawjson.ObjectMembers(data); err != nil {
			return nil, fmt.Errorf("chat: entry %s: stored message: %w", g.message.ID, err)
		}
	}
	contentV := rawjson.Lookup(msg, "content")
	refusal := rawjson.Lookup(msg, "refusal")
	name := rawjson.Lookup(msg, "name")
	audio := rawjson.Lookup(msg, "audio")
	functionCall := rawjson.Lookup(msg, "function_call")
	if len(g.calls) == 0 && rawjson.IsNull(contentV) && rawjson.IsNull(refusal) && rawjson.IsNull(functionCall) && rawjson.IsNull(audio) {
		return nil, nil
	}

	var b bytes.Buffer
	b.WriteString(`{"role":"assistant","content":`)
	if rawjson.IsNull(contentV) {
		b.WriteString("null") // absent ≡ null; some servers require the key
	} else {
		b.Write(contentV)
	}
	if !rawjson.IsNull(refusal) {
		b.WriteString(`,"refusal":`)
		b.Write(refusal)
	}
	if !rawjson.IsNull(name) {
		b.WriteString(`,"name":`)
		b.Write(name)
	}
	if !rawjson.IsNull(audio) {
		// A request refers to earlier audio by id only; the response's data,
		// transcript and expiry are output fields.
		am, err := rawjson.ObjectMembers(audio)
		if err == nil && !rawjson.IsNull(rawjson.Lookup(am, "id")) {
			b.WriteString(`,"audio":{"id":`)
			b.Write(rawjson.Lookup(am, "id"))
			b.WriteByte('}')
		}
	}
	if !rawjson.IsNull(functionCall) {
		b.WriteString(`,"function_call":`)
		b.Write(functionCall)
	}
	if opts.ReasoningField != "" && g.reasoning != nil {
		data, err := load(*g.reasoning)
		if err != nil {
			return nil, err
		}
		rm, err := rawjson.ObjectMembers(data)
		if err != nil {
			return nil, fmt.Errorf("chat: entry %s: stored reasoning: %w", g.reasoning.ID, err)
		}
		if text := rawjson.Lookup(rm, "text"); !rawjson.IsNull(text) {
			b.WriteByte(',')
			rawjson.WriteString(&b, opts.ReasoningField)
			b.WriteByte(':')
			b.Write(text)
		}
	}
	if len(g.calls) > 0 {
		b.WriteString(`,"tool_calls":[`)
		for i, c := range g.calls {
			data, err := load(c)
			if err != nil {
				return nil, err
			}
			raw, err := rawjson.Compact(data)
			if err != nil || len(raw) == 0 || raw[0] != '{' {
				return nil, fmt.Errorf("chat: entry %s: stored tool call is not a JSON object", c.ID)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(raw)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// partsMessage lowers a tool result of several parts to a tool message of
// text parts, in order. Chat Completions takes no images in a tool
// message: each part that is not text is a text part naming it.
func partsMessage(e core.Entry, load func(core.Entry) ([]byte, error)) ([]byte, error) {
	parts, err := provider.LoadParts(e, load)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"role":"tool","tool_call_id":`)
	rawjson.WriteString(&b, e.CallID)
	b.WriteString(`,"content":[`)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"text","text":`)
		rawjson.WriteString(&b, p.Shown())
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	return b.Bytes(), nil
}
