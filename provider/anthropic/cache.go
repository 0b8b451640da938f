package anthropic

// Cache markers.
//
// Anthropic caches request prefixes up to blocks marked with
// `cache_control: {"type":"ephemeral"}` (plus `"ttl"` when the session's
// parameters set cacheTtl). Cairn places at most four markers, the API's
// limit:
//
//  1. the last system block (the assembled instructions);
//  2. the last tool (every provider.Tool is non-deferred: Cairn does not
//     send tools with defer_loading);
//  3. the last markable block of the last message — the breakpoint that
//     writes this turn's prefix;
//  4. the last markable block of the latest user message before the last
//     message — the previous request's last message in a tool loop or a
//     conversation, so the prefix request N wrote at its marker 3 is read
//     back at exactly the same block. Without it, a turn that adds more than
//     the provider's ~20-block lookback (a web search answer easily does)
//     would miss the previous turn's cache entry.
//
// Markers never go on thinking or redacted_thinking blocks, on text blocks
// with citations, or on empty text blocks; the previous markable block of the
// same message is used instead, and no marker is placed when the message has
// none.
//
// Markers exist only in the request. Stored blocks are never touched: a
// marked block is a copy of the stored bytes with cache_control appended as
// its last member.
//
// Prefix stability. Marker 3 moves every turn, so request N's last message
// (where it sat) differs from the same message in request N+1 by exactly
// that marker — and, through marker 4, request N-1's last message loses
// its marker in request N+1. A byte-prefix comparison of consecutive
// requests must therefore strip the markers (remove every
// `,"cache_control":{…}` member the adapter adds) and then compare: the
// stripped body of request N without its closing `]}` is then a byte prefix
// of request N+1's stripped body whenever the context only grew at its tail.
// Stripping is the right comparison rather than "all but the last message"
// because it still checks the last message's blocks byte for byte, and
// because it is what the provider compares: cache_control marks where a
// prefix may be cached, it is not part of the cached content.

// markPlan says which blocks carry a marker (-1: none).
type markPlan struct {
	system int
	tool   int
	msgs   [2][2]int // (message, block) pairs; -1 message = unused
}

func (p markPlan) marks(msg, blk int) bool {
	for _, m := range p.msgs {
		if m[0] == msg && m[1] == blk {
			return true
		}
	}
	return false
}

// noMarks places no marker.
var noMarks = markPlan{system: -1, tool: -1, msgs: [2][2]int{{-1, -1}, {-1, -1}}}

// placeMarkers chooses the marked blocks of a conversation with ntools tools.
func placeMarkers(c conversation, ntools int) markPlan {
	plan := markPlan{system: -1, tool: ntools - 1, msgs: [2][2]int{{-1, -1}, {-1, -1}}}
	for i := len(c.system) - 1; i >= 0; i-- {
		if c.system[i].markable() {
			plan.system = i
			break
		}
	}
	last := len(c.messages) - 1
	if last < 0 {
		return plan
	}
	if j := lastMarkable(c.messages[last].blocks); j >= 0 {
		plan.msgs[0] = [2]int{last, j}
	}
	for i := last - 1; i >= 0; i-- {
		if c.messages[i].role == roleUser {
			if j := lastMarkable(c.messages[i].blocks); j >= 0 {
				plan.msgs[1] = [2]int{i, j}
			}
			break
		}
	}
	return plan
}

func lastMarkable(blocks []block) int {
	for j := len(blocks) - 1; j >= 0; j-- {
		if blocks[j].markable() {
			return j
		}
	}
	return -1
}

// cacheControl is the marker's value.
func cacheControl(ttl string) []byte {
	if ttl == "" {
		return []byte(`{"type":"ephemeral"}`)
	}
	return []byte(`{"type":"ephemeral","ttl":"` + ttl + `"}`) // ttl is "5m" or "1h", validated
}
