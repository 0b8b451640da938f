package sse

import (
	"fmt"

	"github.com/cairn-agents/cairn/provider/rawjson"
)

// textMembers are the Chat Completions message members a stream sends in
// pieces.
var textMembers = map[string]bool{"content": true, "refusal": true, "reasoning_content": true, "reasoning": true}

// Chat streams a chat.completion as chat.completion.chunk objects: the
// message's members in their order, each tool call first with its id, type
// and name and then its arguments, the finish reason, usage on a last
// chunk without choices, and [DONE].
func Chat(body []byte) ([]byte, error) {
	top, err := rawjson.ObjectMembers(body)
	if err != nil {
		return nil, err
	}
	choices, err := rawjson.ArrayElements(rawjson.Lookup(top, "choices"))
	if err != nil || len(choices) == 0 {
		return nil, fmt.Errorf("sse: a completion without choices")
	}
	choice, err := rawjson.ObjectMembers(choices[0])
	if err != nil {
		return nil, err
	}
	msg, err := rawjson.ObjectMembers(rawjson.Lookup(choice, "message"))
	if err != nil {
		return nil, err
	}
	var head []rawjson.Member
	for _, m := range top {
		switch m.Name {
		case "choices", "usage":
		case "object":
			head = append(head, member(m.Name, []byte(`"chat.completion.chunk"`)))
		default:
			head = append(head, m)
		}
	}
	w := &writer{}
	chunk := func(choices string, extra ...rawjson.Member) {
		ms := append(append([]rawjson.Member{}, head...), member("choices", []byte(choices)))
		w.event("", object(append(ms, extra...)...))
	}
	delta := func(d []byte) { chunk(`[{"index":0,"delta":` + string(d) + `,"logprobs":null,"finish_reason":null}]`) }
	for _, m := range msg {
		switch {
		case textMembers[m.Name]:
			s, ok := rawjson.String(m.Value)
			if !ok || len(s) < 2 {
				delta(object(m))
				continue
			}
			for _, piece := range halves(s) {
				delta(object(member(m.Name, quote(piece))))
			}
		case m.Name == "tool_calls" && !rawjson.IsNull(m.Value):
			calls, err := rawjson.ArrayElements(m.Value)
			if err != nil {
				return nil, err
			}
			for i, c := range calls {
				cm, err := rawjson.ObjectMembers(c)
				if err != nil {
					return nil, err
				}
				first := []rawjson.Member{member("index", fmt.Appendf(nil, "%d", i))}
				args := ""
				for _, f := range cm {
					switch f.Name {
					case "index":
					case "function":
						fn, err := rawjson.ObjectMembers(f.Value)
						if err != nil {
							return nil, err
						}
						args, _ = rawjson.String(rawjson.Lookup(fn, "arguments"))
						first = append(first, member(f.Name, object(with(fn, "arguments", []byte(`""`))...)))
					default:
						first = append(first, f)
					}
				}
				delta([]byte(`{"tool_calls":[` + string(object(first...)) + `]}`))
				for _, piece := range halves(args) {
					delta(fmt.Appendf(nil, `{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, i, quote(piece)))
				}
			}
		default:
			delta(object(m))
		}
	}
	chunk(`[{"index":0,"delta":{},"logprobs":null,"finish_reason":` + string(rawjson.Lookup(choice, "finish_reason")) + `}]`)
	if u := rawjson.Lookup(top, "usage"); u != nil {
		chunk(`[]`, member("usage", u))
	}
	w.WriteString("data: [DONE]\n\n")
	return w.Bytes(), nil
}
