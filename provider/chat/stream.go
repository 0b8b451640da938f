package chat

import (
	"bytes"
	"io"
	"slices"
	"strings"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/httpx"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// A streamed Chat Completions response is a Server-Sent Events body of
// chat.completion.chunk objects: each carries a delta of the one choice's
// message (role once; content, refusal and reasoning text in pieces; each
// tool call first with its id, type and name, then its arguments in
// pieces, all keyed by the call's index), the finish reason on the last,
// and usage on a final chunk without choices when asked for. assembleStream
// rebuilds the response the same request would have had without
// streaming, so what is stored and re-sent is the same native message:
// members in the order the stream first names them, text joined, a tool
// call's arguments joined and its index (a stream's framing, absent from a
// non-streamed message) left out.

// streamedTextMembers are the message members whose deltas are pieces of
// one string.
var streamedTextMembers = map[string]bool{"content": true, "refusal": true, "reasoning_content": true, "reasoning": true}

// isStream reports whether a response body is a Server-Sent Events stream
// rather than one JSON object.
func isStream(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return bytes.HasPrefix(t, []byte("data:")) || bytes.HasPrefix(t, []byte(":")) || bytes.HasPrefix(t, []byte("event:"))
}

// streamedMessage accumulates the one choice's message.
type streamedMessage struct {
	order []string // members, in the order first seen
	text  map[string]*strings.Builder
	raw   map[string][]byte // members whose last value stands
	calls []*streamedCall   // by index, in the order first seen
	notes [][]byte          // annotations, appended
	// onDelta hears the pieces as they come; nil when nobody listens.
	onDelta func(provider.Delta)
}

func (m *streamedMessage) delta(d provider.Delta) {
	if m.onDelta != nil && d.Text != "" {
		m.onDelta(d)
	}
}

type streamedCall struct {
	index     string
	order     []string // the call's members, first seen
	raw       map[string][]byte
	fnOrder   []string          // its function's members
	fnRaw     map[string][]byte // those besides name and arguments
	name      string
	arguments strings.Builder
}

// assembleStream reads a streamed response and returns the body the same
// response would have had unstreamed; onDelta (nil: none) hears each piece
// of text, reasoning and tool arguments as it is read.
func assembleStream(r io.Reader, onDelta func(provider.Delta)) ([]byte, error) {
	var top []rawjson.Member // members of the chunks besides choices, last value, first position
	setTop := func(m rawjson.Member) {
		for i := range top {
			if top[i].Name == m.Name {
				top[i].Value = m.Value
				return
			}
		}
		top = append(top, m)
	}
	msg := &streamedMessage{text: map[string]*strings.Builder{}, raw: map[string][]byte{}, onDelta: onDelta}
	var finish, logprobs []byte
	done, sawChoice := false, false
	err := httpx.ReadEvents(r, func(data []byte) (bool, error) {
		if string(bytes.TrimSpace(data)) == "[DONE]" {
			done = true
			return true, nil
		}
		ms, err := rawjson.ObjectMembers(data)
		if err != nil {
			return false, &DecodeError{API: "chat", Reason: "a stream chunk", Err: err}
		}
		if e := rawjson.Lookup(ms, "error"); !rawjson.IsNull(e) {
			return false, &httpx.StreamError{Body: httpx.ParseErrorBody(data)}
		}
		for _, m := range ms {
			switch m.Name {
			case "choices":
				choices, err := rawjson.ArrayElements(m.Value)
				if err != nil {
					return false, &DecodeError{API: "chat", Reason: "a stream chunk's choices", Err: err}
				}
				for _, c := range choices {
					cm, err := rawjson.ObjectMembers(c)
					if err != nil {
						return false, &DecodeError{API: "chat", Reason: "a stream choice", Err: err}
					}
					if idx := rawjson.Lookup(cm, "index"); len(idx) > 0 && string(idx) != "0" {
						continue // one choice is asked for; others are not this message
					}
					sawChoice = true
					if err := msg.add(rawjson.Lookup(cm, "delta")); err != nil {
						return false, err
					}
					if f := rawjson.Lookup(cm, "finish_reason"); !rawjson.IsNull(f) {
						finish = f
					}
					if lp := rawjson.Lookup(cm, "logprobs"); len(lp) > 0 {
						logprobs = lp
					}
				}
			case "usage":
				if !rawjson.IsNull(m.Value) {
					setTop(m)
				} else if rawjson.Lookup(top, "usage") == nil {
					setTop(m)
				}
			case "object":
				setTop(rawjson.Member{Name: "object", RawName: m.RawName, Value: []byte(`"chat.completion"`)})
			default:
				setTop(m)
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if !sawChoice || finish == nil && !done {
		return nil, httpx.ErrStreamIncomplete
	}
	if finish == nil {
		finish = []byte("null")
	}
	if logprobs == nil {
		logprobs = []byte("null")
	}
	var body bytes.Buffer
	body.WriteByte('{')
	wroteChoices := false
	writeChoices := func() {
		body.WriteString(`"choices":[{"index":0,"message":`)
		msg.write(&body)
		body.WriteString(`,"logprobs":`)
		body.Write(logprobs)
		body.WriteString(`,"finish_reason":`)
		body.Write(finish)
		body.WriteString(`}]`)
		wroteChoices = true
	}
	for i, m := range top {
		if i > 0 {
			body.WriteByte(',')
		}
		if m.Name == "model" && !wroteChoices { // choices follow the model, as unstreamed
			body.Write(m.RawName)
			body.WriteByte(':')
			body.Write(m.Value)
			body.WriteByte(',')
			writeChoices()
			continue
		}
		body.Write(m.RawName)
		body.WriteByte(':')
		body.Write(m.Value)
	}
	if !wroteChoices {
		if len(top) > 0 {
			body.WriteByte(',')
		}
		writeChoices()
	}
	body.WriteByte('}')
	return body.Bytes(), nil
}

// add folds one delta into the message.
func (m *streamedMessage) add(delta []byte) error {
	if rawjson.IsNull(delta) {
		return nil
	}
	ms, err := rawjson.ObjectMembers(delta)
	if err != nil {
		return &DecodeError{API: "chat", Reason: "a stream delta", Err: err}
	}
	for _, d := range ms {
		if !slices.Contains(m.order, d.Name) {
			m.order = append(m.order, d.Name)
		}
		switch {
		case streamedTextMembers[d.Name]:
			s, isString := rawjson.String(d.Value)
			if !isString {
				if _, ok := m.text[d.Name]; !ok {
					m.raw[d.Name] = d.Value // null until text comes
				}
				continue
			}
			b := m.text[d.Name]
			if b == nil {
				b = &strings.Builder{}
				m.text[d.Name] = b
			}
			b.WriteString(s)
			if d.Name == "content" || d.Name == "refusal" {
				m.delta(provider.Delta{Kind: provider.DeltaText, Text: s})
			} else {
				m.delta(provider.Delta{Kind: provider.DeltaReasoning, Text: s})
			}
		case d.Name == "tool_calls":
			calls, err := rawjson.ArrayElements(d.Value)
			if err != nil {
				return &DecodeError{API: "chat", Reason: "a stream delta's tool_calls", Err: err}
			}
			for _, c := range calls {
				if err := m.addCall(c); err != nil {
					return err
				}
			}
		case d.Name == "annotations":
			notes, err := rawjson.ArrayElements(d.Value)
			if err != nil {
				return &DecodeError{API: "chat", Reason: "a stream delta's annotations", Err: err}
			}
			m.notes = append(m.notes, notes...)
		default:
			m.raw[d.Name] = d.Value
		}
	}
	return nil
}

// addCall folds one tool call delta into the call of its index.
func (m *streamedMessage) addCall(raw []byte) error {
	ms, err := rawjson.ObjectMembers(raw)
	if err != nil {
		return &DecodeError{API: "chat", Reason: "a streamed tool call", Err: err}
	}
	index := string(rawjson.Lookup(ms, "index"))
	var call *streamedCall
	for _, c := range m.calls {
		if c.index == index {
			call = c
		}
	}
	if call == nil {
		call = &streamedCall{index: index, raw: map[string][]byte{}, fnRaw: map[string][]byte{}}
		m.calls = append(m.calls, call)
	}
	for _, f := range ms {
		if f.Name == "index" {
			continue
		}
		if !slices.Contains(call.order, f.Name) {
			call.order = append(call.order, f.Name)
		}
		if f.Name != "function" {
			call.raw[f.Name] = f.Value
			continue
		}
		fn, err := rawjson.ObjectMembers(f.Value)
		if err != nil {
			return &DecodeError{API: "chat", Reason: "a streamed tool call's function", Err: err}
		}
		for _, g := range fn {
			if !slices.Contains(call.fnOrder, g.Name) {
				call.fnOrder = append(call.fnOrder, g.Name)
			}
			s, _ := rawjson.String(g.Value)
			switch g.Name {
			case "name":
				if s != "" {
					call.name = s
				}
			case "arguments":
				call.arguments.WriteString(s)
				id, _ := rawjson.String(call.raw["id"])
				m.delta(provider.Delta{Kind: provider.DeltaToolArguments, Text: s, CallID: id, Name: call.name})
			default:
				call.fnRaw[g.Name] = g.Value
			}
		}
	}
	return nil
}

// write writes the assembled message.
func (m *streamedMessage) write(buf *bytes.Buffer) {
	buf.WriteByte('{')
	for i, name := range m.order {
		if i > 0 {
			buf.WriteByte(',')
		}
		rawjson.WriteString(buf, name)
		buf.WriteByte(':')
		switch {
		case m.text[name] != nil:
			rawjson.WriteString(buf, m.text[name].String())
		case name == "tool_calls":
			buf.WriteByte('[')
			for j, c := range m.calls {
				if j > 0 {
					buf.WriteByte(',')
				}
				c.write(buf)
			}
			buf.WriteByte(']')
		case name == "annotations":
			buf.WriteByte('[')
			buf.Write(bytes.Join(m.notes, []byte(",")))
			buf.WriteByte(']')
		default:
			buf.Write(m.raw[name])
		}
	}
	buf.WriteByte('}')
}

func (c *streamedCall) write(buf *bytes.Buffer) {
	buf.WriteByte('{')
	for i, name := range c.order {
		if i > 0 {
			buf.WriteByte(',')
		}
		rawjson.WriteString(buf, name)
		buf.WriteByte(':')
		if name != "function" {
			buf.Write(c.raw[name])
			continue
		}
		buf.WriteByte('{')
		for j, f := range c.fnOrder {
			if j > 0 {
				buf.WriteByte(',')
			}
			rawjson.WriteString(buf, f)
			buf.WriteByte(':')
			switch f {
			case "name":
				rawjson.WriteString(buf, c.name)
			case "arguments":
				rawjson.WriteString(buf, c.arguments.String())
			default:
				buf.Write(c.fnRaw[f])
			}
		}
		buf.WriteByte('}')
	}
	buf.WriteByte('}')
}
