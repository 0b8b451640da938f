package responses

import (
	"encoding/json"
	"io"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/httpx"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// A streamed Responses answer is a sequence of typed events that ends with
// the whole response: response.completed (or response.incomplete, a
// response cut short by its own limits, which unstreamed comes back the
// same way). That response is what is stored, byte for byte as the
// provider sent it; the events before it are pieces for showing.
// response.failed and error end the stream with the error they carry.

// deltaKinds are the events whose "delta" is a piece worth showing.
var deltaKinds = map[string]string{
	"response.output_text.delta":             provider.DeltaText,
	"response.refusal.delta":                 provider.DeltaText,
	"response.reasoning_summary_text.delta":  provider.DeltaReasoning,
	"response.reasoning_text.delta":          provider.DeltaReasoning,
	"response.function_call_arguments.delta": provider.DeltaToolArguments,
	"response.custom_tool_call_input.delta":  provider.DeltaToolArguments,
}

// assembleStream reads a streamed answer and returns the response it ends
// with; onDelta (nil: none) hears each piece of text, reasoning and tool
// arguments as it is read.
func assembleStream(r io.Reader, onDelta func(provider.Delta)) ([]byte, error) {
	var final []byte
	calls := map[string][2]string{} // item id → the call's id and name, from output_item.added
	err := httpx.ReadEvents(r, func(data []byte) (bool, error) {
		ev, err := rawjson.ObjectMembers(data)
		if err != nil {
			return false, &DecodeError{API: "responses", Reason: "a stream event", Err: err}
		}
		typ, _ := rawjson.String(rawjson.Lookup(ev, "type"))
		switch typ {
		case "response.completed", "response.incomplete":
			final = rawjson.Lookup(ev, "response")
			return true, nil
		case "response.failed":
			resp, _ := rawjson.ObjectMembers(rawjson.Lookup(ev, "response"))
			return false, &httpx.StreamError{Body: errorBody(rawjson.Lookup(resp, "error"))}
		case "error":
			return false, &httpx.StreamError{Body: errorBody(data)}
		}
		if onDelta == nil {
			return false, nil
		}
		if typ == "response.output_item.added" {
			if item, err := rawjson.ObjectMembers(rawjson.Lookup(ev, "item")); err == nil {
				id, _ := rawjson.String(rawjson.Lookup(item, "id"))
				callID, _ := rawjson.String(rawjson.Lookup(item, "call_id"))
				name, _ := rawjson.String(rawjson.Lookup(item, "name"))
				calls[id] = [2]string{callID, name}
			}
		}
		if kind, ok := deltaKinds[typ]; ok {
			if s, _ := rawjson.String(rawjson.Lookup(ev, "delta")); s != "" {
				d := provider.Delta{Kind: kind, Text: s}
				if kind == provider.DeltaToolArguments {
					itemID, _ := rawjson.String(rawjson.Lookup(ev, "item_id"))
					d.CallID, d.Name = calls[itemID][0], calls[itemID][1]
				}
				onDelta(d)
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if rawjson.IsNull(final) {
		return nil, httpx.ErrStreamIncomplete
	}
	return final, nil
}

// errorBody reads {"code", "message"}: an error event, or a failed
// response's error.
func errorBody(raw []byte) httpx.ErrorBody {
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &e) // a malformed error is still an error, without its words
	return httpx.ErrorBody{Code: e.Code, Message: e.Message}
}
