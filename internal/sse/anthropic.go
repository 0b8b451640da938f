package sse

import (
	"fmt"

	"github.com/cairn-agents/cairn/provider/rawjson"
)

// Anthropic streams a Messages response as Anthropic does: message_start
// with the message's members in order (content empty, stop_reason,
// stop_sequence and the other members the end settles null, usage with
// one output token), a ping, each content block as content_block_start
// (text, thinking and signature empty, tool input {}, citations []),
// its deltas and content_block_stop, then message_delta with the stop
// reason and the whole usage, and message_stop.
func Anthropic(body []byte) ([]byte, error) {
	msg, err := rawjson.ObjectMembers(body)
	if err != nil {
		return nil, err
	}
	blocks, err := rawjson.ArrayElements(rawjson.Lookup(msg, "content"))
	if err != nil {
		return nil, err
	}
	w := &writer{named: true}
	var start, settled []rawjson.Member
	for _, m := range msg {
		switch m.Name {
		case "id", "type", "role", "model":
			start = append(start, m)
		case "content":
			start = append(start, member("content", []byte("[]")))
		case "usage":
			u, err := rawjson.ObjectMembers(m.Value)
			if err != nil {
				return nil, err
			}
			start = append(start, member("usage", object(with(u, "output_tokens", []byte("1"))...)))
		default:
			start = append(start, member(m.Name, []byte("null")))
			settled = append(settled, m)
		}
	}
	w.event("message_start", object(member("type", quote("message_start")), member("message", object(start...))))
	w.event("ping", []byte(`{"type": "ping"}`))
	for i, raw := range blocks {
		b, err := rawjson.ObjectMembers(raw)
		if err != nil {
			return nil, err
		}
		typ, _ := rawjson.String(rawjson.Lookup(b, "type"))
		var deltas [][]byte
		pieces := func(deltaType, field string) {
			s, _ := rawjson.String(rawjson.Lookup(b, field))
			for _, p := range halves(s) {
				deltas = append(deltas, object(member("type", quote(deltaType)), member(field, quote(p))))
			}
			b = with(b, field, []byte(`""`))
		}
		switch typ {
		case "text":
			cites, _ := rawjson.ArrayElements(rawjson.Lookup(b, "citations"))
			for _, c := range cites {
				deltas = append(deltas, object(member("type", quote("citations_delta")), member("citation", c)))
			}
			if len(cites) > 0 {
				b = with(b, "citations", []byte("[]")) // the start keeps the member's place
			}
			pieces("text_delta", "text")
		case "thinking":
			pieces("thinking_delta", "thinking")
			sig := rawjson.Lookup(b, "signature")
			deltas = append(deltas, object(member("type", quote("signature_delta")), member("signature", sig)))
			b = with(b, "signature", []byte(`""`))
		case "tool_use", "server_tool_use", "mcp_tool_use":
			input, err := rawjson.Compact(rawjson.Lookup(b, "input"))
			if err != nil {
				return nil, err
			}
			deltas = append(deltas, object(member("type", quote("input_json_delta")), member("partial_json", quote(""))))
			for _, p := range halves(string(input)) {
				deltas = append(deltas, object(member("type", quote("input_json_delta")), member("partial_json", quote(p))))
			}
			b = with(b, "input", []byte("{}"))
		}
		index := fmt.Appendf(nil, "%d", i)
		w.event("content_block_start", object(member("type", quote("content_block_start")), member("index", index), member("content_block", object(b...))))
		for _, d := range deltas {
			w.event("content_block_delta", object(member("type", quote("content_block_delta")), member("index", index), member("delta", d)))
		}
		w.event("content_block_stop", object(member("type", quote("content_block_stop")), member("index", index)))
	}
	end := []rawjson.Member{member("type", quote("message_delta")), member("delta", object(settled...))}
	if u := rawjson.Lookup(msg, "usage"); u != nil {
		end = append(end, member("usage", u))
	}
	w.event("message_delta", object(end...))
	w.event("message_stop", []byte(`{"type":"message_stop"}`))
	return w.Bytes(), nil
}
