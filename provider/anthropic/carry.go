package anthropic

import (
	"context"
	"fmt"
	"net"
	"slices"
	"unsafe"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// A session's next request repeats its last one and adds blocks at the
// end. Lowering goes on from the fold state the last request kept
// (lower), but writing the body, checking the message list and
// listing the segments each passed over the whole conversation again: at
// turn 3,000 of a long chat, a fifth of the server's CPU, and growing with
// every turn. So a request keeps, beside its fold state, what those passes
// made of the part of the conversation no later request changes, and the
// next request does only the rest.

// foldState is what a request keeps for the session's next one: the
// conversation as the fold left it (before normalize), how many message
// blocks it holds, and what the request carried (nil: nothing).
type foldState struct {
	system []block
	msgs   core.SharedSlice[message]
	blocks int
	carry  *carried
}

// carried is what a request made of its conversation that the next request
// of the session can take as it is. It is only kept for a conversation
// normalize left unchanged, which the next one then starts with.
type carried struct {
	// bytes are the first msgs messages as the body sends them, joined by
	// commas: no request marks them again (settled). Empty when they would
	// pass the pieces' prefix budget; those requests write every message.
	msgs  int
	bytes core.SharedSlice[byte]
	// segs is the request's segment list (tools, system blocks, message
	// blocks); the next one extends it when its tools and system blocks
	// are the same, so the executor compares the lists in one step.
	segs   core.SharedSlice[provider.Segment]
	tools  int
	system int
}

// lowered is a request's conversation, with what its fold went on from
// and what it keeps for the session's next request.
type lowered struct {
	conversation
	scope   *provider.PieceScope
	entries []core.Entry
	took    provider.Kept
	fold    *foldState // nil: nothing to keep
	// normal says normalize left the conversation as the fold made it;
	// only then does a request carry anything.
	normal bool
	// prior is what the last request carried, when this conversation
	// starts with that one's (nil otherwise); added are the segments of
	// the message blocks the fold added after it, in order, unless
	// reshaped: the fold left a message out, so the segments are listed
	// again.
	prior    *carried
	added    []provider.Segment
	reshaped bool
}

// lastMessage is the last message of kept followed by tail, or nil.
func lastMessage(kept, tail []message) *message {
	switch {
	case len(tail) > 0:
		return &tail[len(tail)-1]
	case len(kept) > 0:
		return &kept[len(kept)-1]
	}
	return nil
}

// lower folds entries into a conversation, going on from the state the
// session's last request kept; an entry an earlier request lowered comes
// from the pieces, without reading its blob.
func lower(ctx context.Context, blobs blob.Store, entries []core.Entry, pieces *provider.PieceScope) (*lowered, error) {
	load := func(e core.Entry) ([]byte, error) {
		data, err := blobs.Get(ctx, e.Content.Digest)
		if err != nil {
			return nil, fmt.Errorf("anthropic: entry %s: %w", e.ID, err)
		}
		return data, nil
	}
	l := &lowered{scope: pieces, entries: entries}
	var c conversation
	var prior *carried
	var msgs core.SharedSlice[message] // the fold's messages
	blocks := 0
	took := pieces.Prefix(entries)
	if kept, ok := took.State.(*foldState); ok {
		c.system = slices.Clip(kept.system) // appending copies: the kept state stays as it was
		msgs, blocks, prior = kept.msgs, kept.blocks, kept.carry
	} else {
		took = provider.Kept{}
	}
	// The messages the fold adds go to tail, after the first keep kept
	// ones; they extend those in place (core.SharedSlice), so a request
	// does not copy a long session's message list. Only a change to a kept
	// message makes it copy: blocks for the kept last one (a role that
	// continues across requests), whose copy then starts tail, or leaving
	// it out (below).
	kept := msgs.Items()
	keep := len(kept)
	var tail []message
	var added []provider.Segment
	var key []byte // scratch
	for _, e := range entries[took.Entries:] {
		key = pieces.AppendKey(key[:0], e)
		v, ok := pieces.Get(key)
		p, _ := v.(*entryPiece)
		if !ok {
			var err error
			if p, err = lowerPiece(e, load); err != nil {
				return nil, err
			}
			pieces.Put(key, p, p.size())
		}
		if e.Kind == core.EntryInstructions {
			c.system = append(c.system, p.blocks...)
			continue
		}
		// An assistant message of thinking alone (an output cut off after
		// its thinking) is final once another role follows it, and
		// normalize leaves it out: the fold leaves it out now, so that a
		// session that once had one goes on carrying its requests.
		last := lastMessage(kept[:keep], tail)
		if last != nil && last.role != p.role && last.role == roleAssistant && !hasNonThinking(last.blocks) {
			blocks -= len(last.blocks)
			if len(tail) > 0 {
				tail = tail[:len(tail)-1]
			} else {
				keep--
			}
			l.reshaped = true
		}
		if len(tail) == 0 && keep > 0 && kept[keep-1].role == p.role {
			keep--
			tail = append(tail, message{role: kept[keep].role, blocks: slices.Clip(kept[keep].blocks)})
		}
		tail = appendBlocks(tail, p.role, p.blocks)
		blocks += len(p.blocks)
		if prior != nil {
			for _, b := range p.blocks {
				added = append(added, *b.seg)
			}
		}
	}
	if len(tail) > 0 || keep < len(kept) {
		msgs = msgs.Extend(keep, tail...)
	}
	c.messages = slices.Clip(msgs.Items()) // appending copies: the array is shared
	l.took = took
	if pieces != nil && len(entries) > 0 {
		l.fold = &foldState{system: c.system, msgs: msgs, blocks: blocks}
	}
	from := 0
	if prior != nil {
		// The kept messages were checked but the last, which may have
		// gained blocks, and any the fold changed.
		from = max(min(len(kept)-1, keep), 0)
	}
	if normalizedFrom(c.messages, from) {
		l.normal, l.prior, l.added = true, prior, added
	} else {
		c.messages = normalize(c.messages)
	}
	l.conversation = c
	return l, nil
}

// lowerContext turns entries into system blocks and alternating messages,
// going on from the state the session's last request kept, without keeping
// one itself (lowered.request does).
func lowerContext(ctx context.Context, blobs blob.Store, entries []core.Entry, pieces *provider.PieceScope) (conversation, error) {
	l, err := lower(ctx, blobs, entries, pieces)
	if err != nil {
		return conversation{}, err
	}
	return l.conversation, nil
}

// request returns the body parts and the segments of l's first request,
// and keeps l's state, with what it carries, for the session's next
// request.
func (l *lowered) request(model string, p params, tools []provider.Tool) (net.Buffers, []provider.Segment, error) {
	segs, err := l.segmentList(tools)
	if err != nil {
		return nil, nil, err
	}
	plan := placeMarkers(l.conversation, len(tools))
	var carry *carried
	if l.fold != nil && l.normal {
		carry = l.carry(plan, segs, len(tools))
	}
	sent := plan
	if p.uncached {
		sent = noMarks
	}
	var fixed []byte
	fixedMsgs := 0
	if carry != nil {
		fixed, fixedMsgs = carry.bytes.Items(), carry.msgs
	}
	parts, err := l.writeBody(model, p, tools, sent, fixed, fixedMsgs)
	if err != nil {
		return nil, nil, err
	}
	if l.fold != nil {
		l.fold.carry = carry
		l.scope.KeepPrefixState(l.entries, len(l.entries), l.fold, l.fold.size()+carry.size(), l.took)
	}
	return parts, segs.Items(), nil
}

// carry is what l carries to the next request: segs, and its settled
// messages' bytes, extending the prior's.
func (l *lowered) carry(plan markPlan, segs core.SharedSlice[provider.Segment], ntools int) *carried {
	c := &carried{segs: segs, tools: ntools, system: len(l.system)}
	upto := settled(l.conversation, plan)
	from := 0
	var kept core.SharedSlice[byte]
	if pr := l.prior; pr != nil && pr.msgs <= upto {
		from, kept = pr.msgs, pr.bytes
	}
	size := int64(len(kept.Items()))
	for _, m := range l.messages[from:upto] {
		size += messageSize(m) + 1
	}
	if upto == 0 || size > l.scope.PrefixBudget() {
		return c // every message written, as without a kept state
	}
	var add []byte
	for i := from; i < upto; i++ {
		if i > 0 {
			add = append(add, ',')
		}
		add = appendMessage(add, l.messages[i])
	}
	c.msgs, c.bytes = upto, kept.Extend(len(kept.Items()), add...)
	return c
}

// settled is how many leading messages of c no request of the session
// marks, this one or a later one: the markers plan puts on messages go on
// the last message and on the latest user message before it, and both only
// move on as the conversation grows. The last message is never settled: the
// next request may add blocks to it.
func settled(c conversation, plan markPlan) int {
	n := len(c.messages) - 1
	for _, m := range plan.msgs {
		if m[0] >= 0 {
			n = min(n, m[0])
		}
	}
	return max(n, 0)
}

// size is what c holds besides what it shares with the pieces.
func (c *carried) size() int64 {
	if c == nil {
		return 0
	}
	return int64(cap(c.bytes.Items())) + int64(cap(c.segs.Items()))*int64(unsafe.Sizeof(provider.Segment{}))
}

// size is what f holds besides the pieces it shares: the message and
// block headers.
func (f *foldState) size() int64 {
	return int64(48*len(f.msgs.Items()) + 40*len(f.system) + 40*f.blocks)
}

// segmentList is the request's segments (conversation.segmentsAfter), extending
// the prior request's list when this one has its tools and system blocks.
func (l *lowered) segmentList(tools []provider.Tool) (core.SharedSlice[provider.Segment], error) {
	toolSegs, err := toolSegments(tools)
	if err != nil {
		return core.SharedSlice[provider.Segment]{}, err
	}
	if pr := l.prior; pr != nil && !l.reshaped && pr.tools == len(tools) && pr.system == len(l.system) {
		old := pr.segs.Items()
		if len(old) >= pr.tools && core.SegmentsPrefix(old[:pr.tools], toolSegs) == pr.tools {
			return pr.segs.Extend(len(old), l.added...), nil
		}
	}
	var none core.SharedSlice[provider.Segment]
	return none.Extend(0, l.segmentsAfter(toolSegs)...), nil
}

// appendMessage appends m as the body writes a message without a marker.
func appendMessage(dst []byte, m message) []byte {
	dst = append(dst, `{"role":"`...)
	dst = append(dst, m.role...)
	dst = append(dst, `","content":[`...)
	for j, b := range m.blocks {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, b.raw...)
	}
	return append(dst, `]}`...)
}

// messageSize is the length of m's appendMessage bytes.
func messageSize(m message) int64 {
	n := int64(len(`{"role":"","content":[]}`) + len(m.role) + max(len(m.blocks)-1, 0))
	for _, b := range m.blocks {
		n += int64(len(b.raw))
	}
	return n
}
