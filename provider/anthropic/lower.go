package anthropic

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// UnsupportedEntryError: an entry this API kind cannot express.
type UnsupportedEntryError struct {
	EntryID string
	Kind    string
	Reason  string
}

func (e *UnsupportedEntryError) Error() string {
	return fmt.Sprintf("anthropic: cannot lower entry %s (kind %s): %s", e.EntryID, e.Kind, e.Reason)
}

// Roles of Messages API messages.
const (
	roleUser      = core.RoleUser
	roleAssistant = core.RoleAssistant
)

// message is one request message: a role and its blocks in order.
type message struct {
	role   string
	blocks []block
}

// conversation is a lowered context: the system blocks and the messages.
type conversation struct {
	system   []block
	messages []message
}

// Lower builds the Messages request body for req. It only reads blobs; the
// result is a pure function of the entries' bytes, the tools and req.Params,
// so the same context always gives the same body. The layout and the cache
// markers are described in the package comment and in cache.go.
func Lower(ctx context.Context, blobs blob.Store, req provider.Request) ([]byte, error) {
	p, err := parseParams(req.Params)
	if err != nil {
		return nil, err
	}
	l, err := lower(ctx, blobs, req.Entries, req.Pieces.Scope(APIKind, req, ""))
	if err != nil {
		return nil, err
	}
	parts, _, err := l.request(req.Model.Model, p, req.Tools)
	if err != nil {
		return nil, err
	}
	return bytes.Join(parts, nil), nil
}

// entryPiece is one entry's blocks and the role of the message they go
// in ("" for system blocks); it is the piece this adapter keeps. Blocks
// join other entries' blocks in messages only when the request is
// assembled, and cache markers are added to copies then, so a piece is the
// same wherever the entry sits.
type entryPiece struct {
	role   string
	blocks []block // full: appending to it copies, so a kept piece is never written
}

// lowerPiece lowers one entry to its blocks, each with its cache segment:
// the block's bytes, plus its message's role (a block's digest covers
// both, since the provider reads the same bytes differently per role).
func lowerPiece(e core.Entry, load func(core.Entry) ([]byte, error)) (*entryPiece, error) {
	if e.Kind == core.EntryInstructions {
		text, err := entryText(e, load)
		if err != nil {
			return nil, err
		}
		b := textBlock(text)
		seg := core.NewCacheSegment(core.SegmentInstructions, "", b.raw, []core.Entry{e})
		b.seg = &seg
		return &entryPiece{blocks: []block{b}}, nil
	}
	role, blocks, err := lowerEntry(e, load)
	if err != nil {
		return nil, err
	}
	for i := range blocks {
		seg := core.NewCacheSegment(e.Kind, "", blocks[i].raw, []core.Entry{e}, []byte(role))
		blocks[i].seg = &seg
	}
	return &entryPiece{role: role, blocks: slices.Clip(blocks)}, nil
}

func (p *entryPiece) size() int64 {
	var n int64
	for _, b := range p.blocks {
		n += int64(len(b.raw)+len(b.typ)) + provider.SegmentSize(*b.seg)
	}
	return n
}

// appendBlocks adds blocks to the last message when it has the same role,
// otherwise as a new message: the API wants strict alternation, and the
// blocks of one response arrive as several entries.
func appendBlocks(msgs []message, role string, blocks []block) []message {
	if n := len(msgs); n > 0 && msgs[n-1].role == role {
		msgs[n-1].blocks = append(msgs[n-1].blocks, blocks...)
		return msgs
	}
	return append(msgs, message{role: role, blocks: blocks})
}

// normalize enforces what the API requires of the message list:
//   - no assistant message without content, or with thinking alone (a failed
//     output cut after its thinking): there is nothing to answer to, and
//     the API rejects an empty assistant message;
//   - strict alternation again, where dropping one joined two user messages;
//   - tool_result blocks first in their user message, in their own order,
//     then the rest (steering, catalogs, …) in theirs.
func normalize(msgs []message) []message {
	if normalizedFrom(msgs, 0) {
		return msgs // most requests: no copy of a long session's message list
	}
	var out []message
	for _, m := range msgs {
		if m.role == roleAssistant && !hasNonThinking(m.blocks) {
			continue
		}
		out = appendBlocks(out, m.role, m.blocks)
	}
	for i := range out {
		if out[i].role != roleUser || resultsFirst(out[i].blocks) {
			continue // as it is: most user messages hold no tool result
		}
		var results, rest []block
		for _, b := range out[i].blocks {
			if b.typ == typeToolResult {
				results = append(results, b)
			} else {
				rest = append(rest, b)
			}
		}
		out[i].blocks = append(results, rest...)
	}
	return out
}

// normalizedFrom reports whether msgs are already what normalize makes of
// them (alternating roles, no assistant message without content, tool
// results first), given that their first from messages are.
func normalizedFrom(msgs []message, from int) bool {
	for i := min(from, len(msgs)); i < len(msgs); i++ {
		m := msgs[i]
		if i > 0 && msgs[i-1].role == m.role {
			return false
		}
		if m.role == roleAssistant && !hasNonThinking(m.blocks) || m.role == roleUser && !resultsFirst(m.blocks) {
			return false
		}
	}
	return true
}

// resultsFirst reports whether no tool_result block follows a block of
// another type: the order normalize would put them in.
func resultsFirst(blocks []block) bool {
	other := false
	for _, b := range blocks {
		if b.typ != typeToolResult {
			other = true
		} else if other {
			return false
		}
	}
	return true
}

func hasNonThinking(blocks []block) bool {
	for _, b := range blocks {
		if !b.isThinking() {
			return true
		}
	}
	return false
}

// lowerEntry returns an entry's role and blocks.
func lowerEntry(e core.Entry, load func(core.Entry) ([]byte, error)) (string, []block, error) {
	if core.IsTranscript(e.Content) && e.Kind == core.EntryMessage {
		// A transcript of audio input: user text labelled with its file.
		data, err := load(e)
		if err != nil {
			return "", nil, err
		}
		rec, err := core.DecodeTranscript(data)
		if err != nil {
			return "", nil, fmt.Errorf("anthropic: entry %s: %w", e.ID, err)
		}
		return roleUser, []block{textBlock(rec.ModelText())}, nil
	}
	if pk := e.Content.ProviderKind; pk != "" {
		want, ok := kindOf[pk]
		if !ok {
			return "", nil, &UnsupportedEntryError{e.ID, e.Kind, "provider kind " + pk + " is not Anthropic Messages material"}
		}
		if e.Kind != want {
			return "", nil, &UnsupportedEntryError{e.ID, e.Kind, "provider kind " + pk + " belongs to kind " + want}
		}
		data, err := load(e)
		if err != nil {
			return "", nil, err
		}
		blocks, err := storedBlocks(pk, data)
		if err != nil {
			return "", nil, fmt.Errorf("anthropic: entry %s: stored %s: %w", e.ID, pk, err)
		}
		return roleAssistant, blocks, nil
	}

	switch e.Kind {
	case core.EntryToolResult:
		b, err := toolResult(e, load)
		return roleUser, []block{b}, err
	case core.EntryMessage, core.EntryCatalog, core.EntrySkillActivation, core.EntrySummary:
		text, err := entryText(e, load)
		if err != nil {
			return "", nil, err
		}
		role := roleUser
		if e.Kind == core.EntryMessage && e.Role == core.RoleAssistant {
			role = roleAssistant // runtime-authored assistant text
		}
		return role, []block{textBlock(text)}, nil
	}
	return "", nil, &UnsupportedEntryError{e.ID, e.Kind, "no Anthropic Messages form for this kind without native content"}
}

// kindOf maps each provider kind this adapter writes to its entry kind.
var kindOf = map[string]string{
	ProviderKindText:             core.EntryMessage,
	ProviderKindThinking:         core.EntryReasoning,
	ProviderKindRedactedThinking: core.EntryReasoning,
	ProviderKindToolUse:          core.EntryToolCall,
	ProviderKindBlock:            core.EntryProviderOpaque,
}

// storedBlocks reads a stored blob back into the blocks a request carries.
func storedBlocks(providerKind string, data []byte) ([]block, error) {
	var raws [][]byte
	if providerKind == ProviderKindText {
		elems, err := rawjson.ArrayElements(data)
		if err != nil {
			return nil, err
		}
		raws = elems
	} else {
		raws = [][]byte{data}
	}
	out := make([]block, 0, len(raws))
	for _, raw := range raws {
		b, _, err := parseBlock(raw)
		if err != nil {
			return nil, err
		}
		if want := wantType[providerKind]; want != "" && b.typ != want {
			return nil, fmt.Errorf("holds a %q block", b.typ)
		}
		if b, err = sendable(b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// wantType is the block type each provider kind holds ("" for any).
var wantType = map[string]string{
	ProviderKindText:             typeText,
	ProviderKindThinking:         typeThinking,
	ProviderKindRedactedThinking: typeRedactedThinking,
	ProviderKindToolUse:          typeToolUse,
}

// errorResults are the runtime's constant results that report a failure;
// they are sent with is_error so the model reads them as errors.
var errorResults = map[content.Digest]bool{
	core.ToolUnavailableRef.Digest: true,
	core.ToolFailedRef.Digest:      true,
	core.ToolCancelledRef.Digest:   true,
}

// toolResult lowers a tool result entry to a tool_result block.
func toolResult(e core.Entry, load func(core.Entry) ([]byte, error)) (block, error) {
	if e.CallID == "" {
		return block{}, &UnsupportedEntryError{e.ID, e.Kind, "tool result without a call id"}
	}
	if core.IsParts(e.Content) {
		return partsResult(e, load)
	}
	if !content.IsText(e.Content.MediaType) && !strings.HasPrefix(e.Content.MediaType, content.MediaJSON) {
		return block{}, &UnsupportedEntryError{e.ID, e.Kind, "tool result of media type " + e.Content.MediaType}
	}
	data, err := load(e)
	if err != nil {
		return block{}, err
	}
	var buf bytes.Buffer
	buf.WriteString(`{"type":"tool_result","tool_use_id":`)
	rawjson.WriteString(&buf, e.CallID)
	if len(data) > 0 { // an empty content string is refused; no content is allowed
		buf.WriteString(`,"content":`)
		rawjson.WriteString(&buf, string(data))
	}
	if errorResults[e.Content.Digest] {
		buf.WriteString(`,"is_error":true`)
	}
	buf.WriteByte('}')
	return block{raw: buf.Bytes(), typ: typeToolResult}, nil
}

// partsResult lowers a tool result of several parts to a tool_result
// block whose content is text and image blocks, in order; a part that is
// not an image Anthropic takes is a text block naming it.
func partsResult(e core.Entry, load func(core.Entry) ([]byte, error)) (block, error) {
	parts, err := provider.LoadParts(e, load)
	if err != nil {
		return block{}, err
	}
	var buf bytes.Buffer
	buf.WriteString(`{"type":"tool_result","tool_use_id":`)
	rawjson.WriteString(&buf, e.CallID)
	buf.WriteString(`,"content":[`)
	for i, p := range parts {
		if i > 0 {
			buf.WriteByte(',')
		}
		if p.IsImage() {
			buf.WriteString(`{"type":"image","source":{"type":"base64","media_type":`)
			rawjson.WriteString(&buf, p.MediaType)
			buf.WriteString(`,"data":"`)
			buf.WriteString(base64.StdEncoding.EncodeToString(p.Data))
			buf.WriteString(`"}}`)
			continue
		}
		buf.WriteString(`{"type":"text","text":`)
		rawjson.WriteString(&buf, p.Shown())
		buf.WriteByte('}')
	}
	buf.WriteByte(']')
	if errorResults[e.Content.Digest] {
		buf.WriteString(`,"is_error":true`)
	}
	buf.WriteByte('}')
	return block{raw: buf.Bytes(), typ: typeToolResult}, nil
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

// withAssistant returns the conversation with blocks appended as (or to) the
// trailing assistant message: how a pause_turn response is sent back.
func (c conversation) withAssistant(blocks []block) (conversation, error) {
	sent := make([]block, 0, len(blocks))
	for _, b := range blocks {
		s, err := sendable(b)
		if err != nil {
			return conversation{}, err
		}
		sent = append(sent, s)
	}
	msgs := make([]message, len(c.messages), len(c.messages)+1)
	for i, m := range c.messages {
		msgs[i] = message{role: m.role, blocks: m.blocks[:len(m.blocks):len(m.blocks)]} // appends copy
	}
	return conversation{system: c.system, messages: normalize(appendBlocks(msgs, roleAssistant, sent))}, nil
}

// body is the request bodyParts writes, joined.
func (c conversation) body(model string, p params, tools []provider.Tool) ([]byte, error) {
	parts, err := c.bodyParts(model, p, tools)
	if err != nil {
		return nil, err
	}
	return bytes.Join(parts, nil), nil
}

// bodyParts writes the request in parts, in order: the framing, and each
// block's bytes as they are kept when the block is large enough to be
// worth a part of its own (httpx.Call.Parts). Joining a long session's
// request cost a fresh buffer of its whole size a turn, zeroed and copied
// into. Members in a fixed order: everything fixed for a session first,
// then tools, system and messages — the order of Anthropic's cache
// hierarchy, so that the body's byte prefix is what the provider can
// reuse (a changed instruction keeps the tools' prefix); see the package
// comment.
func (c conversation) bodyParts(model string, p params, tools []provider.Tool) (net.Buffers, error) {
	plan := noMarks
	if !p.uncached {
		plan = placeMarkers(c, len(tools))
	}
	return c.writeBody(model, p, tools, plan, nil, 0)
}

// writeBody writes the request with the markers of plan. fixed, when
// given, are the first fixedMsgs messages as bodyParts writes them (none
// marked), sent as one part (carry.go).
func (c conversation) writeBody(model string, p params, tools []provider.Tool, plan markPlan, fixed []byte, fixedMsgs int) (net.Buffers, error) {
	if model == "" {
		return nil, fmt.Errorf("anthropic: request has no model")
	}
	if len(c.messages) == 0 {
		return nil, fmt.Errorf("anthropic: request has no messages (the context holds only instructions)")
	}
	marker := cacheControl(p.cacheTTL)

	// The framing and the short blocks are written to one buffer, sized
	// first (grown by doubling, a long session's request was copied about
	// twice over); each part of it ends where a block sent on its own
	// (the kept bytes, never written) begins.
	size := 256 + 64*len(tools) + len(marker)*4
	for _, b := range c.system {
		size += copied(b.raw) + 1
	}
	for _, m := range c.messages[fixedMsgs:] {
		size += len(`{"role":"","content":[]},`) + len(m.role)
		for _, b := range m.blocks {
			size += copied(b.raw) + 1
		}
	}
	var parts net.Buffers
	var buf bytes.Buffer
	buf.Grow(size)
	from := 0 // where the framing's next part starts
	block := func(raw []byte) {
		if copied(raw) > 0 {
			buf.Write(raw)
			return
		}
		if n := buf.Len(); n > from {
			parts = append(parts, buf.Bytes()[from:n:n])
			from = n
		}
		parts = append(parts, raw)
	}
	buf.WriteString(`{"model":`)
	rawjson.WriteString(&buf, model)
	buf.WriteString(`,"max_tokens":`)
	buf.WriteString(strconv.FormatInt(p.effectiveMaxTokens(), 10))
	if p.temperature != nil {
		buf.WriteString(`,"temperature":`)
		buf.Write(p.temperature)
	}
	if p.topP != nil {
		buf.WriteString(`,"top_p":`)
		buf.Write(p.topP)
	}
	if p.topK != 0 {
		buf.WriteString(`,"top_k":`)
		buf.WriteString(strconv.FormatInt(p.topK, 10))
	}
	if p.thinking != nil {
		buf.WriteString(`,"thinking":`)
		buf.Write(p.thinking)
	}
	if p.serviceTier != "" {
		buf.WriteString(`,"service_tier":`)
		rawjson.WriteString(&buf, p.serviceTier)
	}
	for _, x := range p.extra {
		buf.WriteByte(',')
		buf.Write(x.RawName)
		buf.WriteByte(':')
		buf.Write(x.Value)
	}
	if len(tools) > 0 {
		buf.WriteString(`,"tools":[`)
		for i, t := range tools {
			if i > 0 {
				buf.WriteByte(',')
			}
			var m []byte
			if i == plan.tool {
				m = marker
			}
			if err := writeTool(&buf, t, m); err != nil {
				return nil, err
			}
		}
		buf.WriteByte(']')
	}
	if len(c.system) > 0 {
		buf.WriteString(`,"system":[`)
		for i, b := range c.system {
			if i > 0 {
				buf.WriteByte(',')
			}
			if i == plan.system {
				block(b.withMarker(marker)) // a fresh copy: a part like any block
			} else {
				block(b.raw)
			}
		}
		buf.WriteByte(']')
	}
	buf.WriteString(`,"messages":[`)
	if fixedMsgs > 0 {
		n := buf.Len()
		parts = append(parts, buf.Bytes()[from:n:n], fixed)
		from = n
	}
	for i := fixedMsgs; i < len(c.messages); i++ {
		m := c.messages[i]
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"role":"`)
		buf.WriteString(m.role)
		buf.WriteString(`","content":[`)
		for j, b := range m.blocks {
			if j > 0 {
				buf.WriteByte(',')
			}
			if plan.marks(i, j) {
				block(b.withMarker(marker)) // a fresh copy: a part like any block
			} else {
				block(b.raw)
			}
		}
		buf.WriteString(`]}`)
	}
	buf.WriteByte(']')
	if p.stream {
		buf.WriteString(`,"stream":true`)
	}
	buf.WriteByte('}')
	return append(parts, buf.Bytes()[from:]), nil
}

// copied is how many bytes of a block bodyParts copies: all of a short
// one, none of one from ownPartMin up, which goes as a part of its own
// (below it, a part costs more than the copy).
func copied(raw []byte) int {
	if len(raw) < ownPartMin {
		return len(raw)
	}
	return 0
}

const ownPartMin = 512

// toolSegments are the tools' segments, in order.
func toolSegments(tools []provider.Tool) ([]provider.Segment, error) {
	segs := make([]provider.Segment, 0, len(tools))
	for _, t := range tools {
		var tb bytes.Buffer
		if err := writeTool(&tb, t, nil); err != nil {
			return nil, err
		}
		segs = append(segs, core.NewCacheSegment(core.SegmentTool, t.Name, tb.Bytes(), nil))
	}
	return segs, nil
}

// segmentsAfter cuts the request c makes into its cache segments, after
// toolSegs (toolSegments), in the order of Anthropic's cache hierarchy:
// each tool, each system block, then each message block. Anthropic
// matches cached prefixes block by block, so a message that gains blocks
// keeps the prefix up to them. A block's segment was made when its entry
// was lowered (lowerPiece): its digest covers its bytes without a cache
// marker (markers move from request to request and are not cached
// content) and its message's role.
func (c conversation) segmentsAfter(toolSegs []provider.Segment) []provider.Segment {
	segs := make([]provider.Segment, 0, len(toolSegs)+len(c.system)+2*len(c.messages))
	segs = append(segs, toolSegs...)
	for _, b := range c.system {
		segs = append(segs, *b.seg)
	}
	for _, m := range c.messages {
		for _, b := range m.blocks {
			segs = append(segs, *b.seg)
		}
	}
	return segs
}

// writeTool writes {name, description?, input_schema} and the cache marker
// when given one. A tool without parameters takes any object.
func writeTool(buf *bytes.Buffer, t provider.Tool, marker []byte) error {
	if t.Name == "" {
		return fmt.Errorf("anthropic: tool without a name")
	}
	buf.WriteString(`{"name":`)
	rawjson.WriteString(buf, t.Name)
	if t.Description != "" {
		buf.WriteString(`,"description":`)
		rawjson.WriteString(buf, t.Description)
	}
	buf.WriteString(`,"input_schema":`)
	if len(bytes.TrimSpace(t.Parameters)) == 0 {
		buf.WriteString(`{"type":"object"}`)
	} else {
		schema, err := rawjson.Compact(t.Parameters)
		if err != nil {
			return fmt.Errorf("anthropic: tool %q: parameters: %w", t.Name, err)
		}
		buf.Write(schema)
	}
	if marker != nil {
		buf.WriteString(`,"cache_control":`)
		buf.Write(marker)
	}
	buf.WriteByte('}')
	return nil
}
