package sse

import (
	"fmt"

	"github.com/cairn-agents/cairn/provider/rawjson"
)

// Responses streams a Responses body as OpenAI does: response.created
// with the response in progress and no output, each output item added,
// its text, refusal, reasoning summary or arguments as deltas, the item
// done, and response.completed with the whole response. Every event
// carries its sequence_number.
func Responses(body []byte) ([]byte, error) {
	resp, err := rawjson.Compact(body)
	if err != nil {
		return nil, err
	}
	top, err := rawjson.ObjectMembers(resp)
	if err != nil {
		return nil, err
	}
	items, err := rawjson.ArrayElements(rawjson.Lookup(top, "output"))
	if err != nil {
		return nil, err
	}
	w := &writer{named: true}
	seq := 0
	event := func(typ string, ms ...rawjson.Member) {
		head := []rawjson.Member{member("type", quote(typ)), member("sequence_number", fmt.Appendf(nil, "%d", seq))}
		w.event(typ, object(append(head, ms...)...))
		seq++
	}
	created := with(with(top, "status", quote("in_progress")), "output", []byte("[]"))
	created = with(created, "usage", []byte("null"))
	event("response.created", member("response", object(created...)))
	for i, raw := range items {
		item, err := rawjson.ObjectMembers(raw)
		if err != nil {
			return nil, err
		}
		index := member("output_index", fmt.Appendf(nil, "%d", i))
		id := member("item_id", rawjson.Lookup(item, "id"))
		typ, _ := rawjson.String(rawjson.Lookup(item, "type"))
		added := item
		if rawjson.Lookup(item, "status") != nil {
			added = with(added, "status", quote("in_progress"))
		}
		switch typ {
		case "message":
			added = with(added, "content", []byte("[]"))
		case "function_call":
			added = with(added, "arguments", quote(""))
		}
		event("response.output_item.added", index, member("item", object(added...)))
		pieces := func(deltaType string, text []byte, extra ...rawjson.Member) {
			s, _ := rawjson.String(text)
			for _, p := range halves(s) {
				event(deltaType, append(append([]rawjson.Member{id, index}, extra...), member("delta", quote(p)))...)
			}
		}
		switch typ {
		case "message":
			parts, _ := rawjson.ArrayElements(rawjson.Lookup(item, "content"))
			for j, p := range parts {
				pm, err := rawjson.ObjectMembers(p)
				if err != nil {
					return nil, err
				}
				ci := member("content_index", fmt.Appendf(nil, "%d", j))
				switch pt, _ := rawjson.String(rawjson.Lookup(pm, "type")); pt {
				case "output_text":
					pieces("response.output_text.delta", rawjson.Lookup(pm, "text"), ci)
				case "refusal":
					pieces("response.refusal.delta", rawjson.Lookup(pm, "refusal"), ci)
				}
			}
		case "reasoning":
			parts, _ := rawjson.ArrayElements(rawjson.Lookup(item, "summary"))
			for j, p := range parts {
				pm, err := rawjson.ObjectMembers(p)
				if err != nil {
					return nil, err
				}
				pieces("response.reasoning_summary_text.delta", rawjson.Lookup(pm, "text"), member("summary_index", fmt.Appendf(nil, "%d", j)))
			}
		case "function_call":
			pieces("response.function_call_arguments.delta", rawjson.Lookup(item, "arguments"))
		}
		event("response.output_item.done", index, member("item", raw))
	}
	final := "response.completed"
	if s, _ := rawjson.String(rawjson.Lookup(top, "status")); s == "incomplete" {
		final = "response.incomplete"
	}
	event(final, member("response", resp))
	return w.Bytes(), nil
}
