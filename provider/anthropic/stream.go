package anthropic

import (
	"bytes"
	"io"
	"slices"
	"strings"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/httpx"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// A streamed Messages answer is a sequence of events: message_start with
// the message (content empty), then for each content block its
// content_block_start (the block with its streamed members empty), deltas
// and content_block_stop, message_delta with the stop reason and the final
// usage, and message_stop. assembleStream rebuilds the message the same
// request gives unstreamed, so what is stored and re-sent is the same
// native message: members in the order message_start and each block start
// give them, text, thinking and signatures joined, citations appended, a
// tool's input from its JSON pieces, and members a delta names that the
// start did not appended in the order they first come.

// streamedBlock is one content block being assembled.
type streamedBlock struct {
	index   string
	members []rawjson.Member // the block's start, then members deltas add
	text    map[string]*strings.Builder
	input   strings.Builder // input_json_delta pieces
	cites   [][]byte        // citations_delta citations
}

// assembleStream reads a streamed answer and returns the message it stands
// for; onDelta (nil: none) hears each piece of text, thinking and tool
// input as it is read.
func assembleStream(r io.Reader, onDelta func(provider.Delta)) ([]byte, error) {
	var msg []rawjson.Member
	var blocks []*streamedBlock
	started, stopped := false, false
	err := httpx.ReadEvents(r, func(data []byte) (bool, error) {
		ev, err := rawjson.ObjectMembers(data)
		if err != nil {
			return false, &DecodeError{API: "anthropic", Reason: "a stream event", Err: err}
		}
		typ, _ := rawjson.String(rawjson.Lookup(ev, "type"))
		switch typ {
		case "message_start":
			if msg, err = rawjson.ObjectMembers(rawjson.Lookup(ev, "message")); err != nil {
				return false, &DecodeError{API: "anthropic", Reason: "message_start's message", Err: err}
			}
			started = true
		case "content_block_start":
			b, err := rawjson.ObjectMembers(rawjson.Lookup(ev, "content_block"))
			if err != nil {
				return false, &DecodeError{API: "anthropic", Reason: "a content_block_start's block", Err: err}
			}
			blocks = append(blocks, &streamedBlock{index: string(rawjson.Lookup(ev, "index")), members: b, text: map[string]*strings.Builder{}})
		case "content_block_delta":
			index := string(rawjson.Lookup(ev, "index"))
			i := slices.IndexFunc(blocks, func(b *streamedBlock) bool { return b.index == index })
			if i < 0 {
				return false, &DecodeError{API: "anthropic", Reason: "a content_block_delta for block " + index + ", which has not started"}
			}
			if err := blocks[i].add(rawjson.Lookup(ev, "delta"), onDelta); err != nil {
				return false, err
			}
		case "message_delta":
			for _, m := range ev {
				switch m.Name {
				case "type":
				case "delta":
					d, err := rawjson.ObjectMembers(m.Value)
					if err != nil {
						return false, &DecodeError{API: "anthropic", Reason: "message_delta's delta", Err: err}
					}
					for _, dm := range d {
						msg = set(msg, dm)
					}
				case "usage":
					u, err := rawjson.ObjectMembers(m.Value)
					if err != nil {
						return false, &DecodeError{API: "anthropic", Reason: "message_delta's usage", Err: err}
					}
					had, _ := rawjson.ObjectMembers(rawjson.Lookup(msg, "usage"))
					for _, um := range u {
						had = set(had, um)
					}
					msg = set(msg, rawjson.Member{Name: "usage", RawName: []byte(`"usage"`), Value: writeObject(had)})
				default:
					msg = set(msg, m)
				}
			}
		case "message_stop":
			stopped = true
			return true, nil
		case "error":
			return false, &httpx.StreamError{Body: httpx.ParseErrorBody(data)}
		}
		// ping, content_block_stop and events this version does not know
		// add nothing to the message.
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if !started || !stopped {
		return nil, httpx.ErrStreamIncomplete
	}
	var content bytes.Buffer
	content.WriteByte('[')
	for i, b := range blocks {
		if i > 0 {
			content.WriteByte(',')
		}
		raw, err := b.write()
		if err != nil {
			return nil, err
		}
		content.Write(raw)
	}
	content.WriteByte(']')
	msg = set(msg, rawjson.Member{Name: "content", RawName: []byte(`"content"`), Value: content.Bytes()})
	return writeObject(msg), nil
}

// add folds one delta into the block. input_json_delta and citations_delta
// have their own rules; any other delta's string members are pieces of the
// block's member of that name (text_delta's text, thinking_delta's
// thinking, signature_delta's signature), and its other members replace.
func (b *streamedBlock) add(delta []byte, onDelta func(provider.Delta)) error {
	d, err := rawjson.ObjectMembers(delta)
	if err != nil {
		return &DecodeError{API: "anthropic", Reason: "a content_block_delta's delta", Err: err}
	}
	typ, _ := rawjson.String(rawjson.Lookup(d, "type"))
	hear := func(kind, text string) {
		if onDelta != nil && text != "" {
			onDelta(provider.Delta{Kind: kind, Text: text})
		}
	}
	switch typ {
	case "input_json_delta":
		s, _ := rawjson.String(rawjson.Lookup(d, "partial_json"))
		b.input.WriteString(s)
		if onDelta != nil && s != "" {
			id, _ := rawjson.String(rawjson.Lookup(b.members, "id"))
			name, _ := rawjson.String(rawjson.Lookup(b.members, "name"))
			onDelta(provider.Delta{Kind: provider.DeltaToolArguments, Text: s, CallID: id, Name: name})
		}
		return nil
	case "citations_delta":
		b.cites = append(b.cites, rawjson.Lookup(d, "citation"))
		return nil
	}
	for _, m := range d {
		if m.Name == "type" {
			continue
		}
		s, isString := rawjson.String(m.Value)
		if !isString {
			b.members = set(b.members, m)
			continue
		}
		t := b.text[m.Name]
		if t == nil {
			t = &strings.Builder{}
			start, _ := rawjson.String(rawjson.Lookup(b.members, m.Name)) // "" when absent or null
			t.WriteString(start)
			b.text[m.Name] = t
			if rawjson.Lookup(b.members, m.Name) == nil {
				b.members = append(b.members, m)
			}
		}
		t.WriteString(s)
		switch typ {
		case "text_delta":
			hear(provider.DeltaText, s)
		case "thinking_delta":
			hear(provider.DeltaReasoning, s)
		}
	}
	return nil
}

// write returns the assembled block.
func (b *streamedBlock) write() ([]byte, error) {
	ms := slices.Clone(b.members)
	for i, m := range ms {
		if t := b.text[m.Name]; t != nil {
			var v bytes.Buffer
			rawjson.WriteString(&v, t.String())
			ms[i].Value = v.Bytes()
		}
	}
	if b.input.Len() > 0 {
		input, err := rawjson.Compact([]byte(b.input.String()))
		if err != nil {
			return nil, &DecodeError{API: "anthropic", Reason: "a tool's streamed input is not JSON", Err: err}
		}
		ms = set(ms, rawjson.Member{Name: "input", RawName: []byte(`"input"`), Value: input})
	}
	if len(b.cites) > 0 {
		had, _ := rawjson.ArrayElements(rawjson.Lookup(ms, "citations"))
		all := append(had, b.cites...)
		v := append(append([]byte("["), bytes.Join(all, []byte(","))...), ']')
		ms = set(ms, rawjson.Member{Name: "citations", RawName: []byte(`"citations"`), Value: v})
	}
	return writeObject(ms), nil
}

// set replaces the member of m's name in place, or appends m.
func set(ms []rawjson.Member, m rawjson.Member) []rawjson.Member {
	for i := range ms {
		if ms[i].Name == m.Name {
			ms[i].Value = m.Value
			return ms
		}
	}
	return append(ms, m)
}

func writeObject(ms []rawjson.Member) []byte {
	var b bytes.Buffer
	rawjson.WriteObject(&b, ms)
	return b.Bytes()
}
