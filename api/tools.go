package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairn-agents/cairn/core"
)

// ClientTool is a tool the client runs, as session/create takes it and
// session/read returns it: {name, description?, parameters}, parameters
// being the JSON Schema of the call's arguments.
type ClientTool = core.ClientTool

// toolItem is one element of a session's "tools" on the wire: a built-in
// tool's name (a string), or a client tool's definition (an object).
type toolItem struct {
	name   string
	client *ClientTool
}

func (t toolItem) MarshalJSON() ([]byte, error) {
	if t.client != nil {
		return json.Marshal(t.client)
	}
	return json.Marshal(t.name)
}

// UnmarshalJSONFrom decodes a tool with the decoder's own (strict)
// options, so errors name their place (tools[1].parameters).
func (t *toolItem) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() == '{' {
		var c ClientTool
		if err := jsonv2.UnmarshalDecode(dec, &c); err != nil {
			return err
		}
		*t = toolItem{name: c.Name, client: &c}
		return nil
	}
	if dec.PeekKind() != '"' {
		return &paramError{msg: "expected a built-in tool's name or a client tool's definition {name, description, parameters}"}
	}
	return jsonv2.UnmarshalDecode(dec, &t.name)
}

// UnmarshalJSON is the lenient form, for decoders other than the API's.
func (t *toolItem) UnmarshalJSON(b []byte) error {
	return jsonv2.Unmarshal(b, t)
}

// toolItems is the wire form of names (every granted tool, in order) and
// the client tools among them; a client tool not named is added at the end.
func toolItems(names []string, client []ClientTool) []toolItem {
	var out []toolItem
	for _, n := range names {
		it := toolItem{name: n}
		if i := slices.IndexFunc(client, func(c ClientTool) bool { return c.Name == n }); i >= 0 {
			it.client = &client[i]
		}
		out = append(out, it)
	}
	for i, c := range client {
		if !slices.Contains(names, c.Name) {
			out = append(out, toolItem{name: c.Name, client: &client[i]})
		}
	}
	return out
}

// splitTools is toolItems undone.
func splitTools(items []toolItem) (names []string, client []ClientTool) {
	for _, it := range items {
		names = append(names, it.name)
		if it.client != nil {
			client = append(client, *it.client)
		}
	}
	return names, client
}

// checkClientTools refuses a client tool named like one of the server's
// built-in tools, and parameters that do not compile as a JSON Schema.
// (The core checks the rest: names, grants, sizes, a JSON object.)
func checkClientTools(client []ClientTool, builtin []string) error {
	for _, t := range client {
		if slices.Contains(builtin, t.Name) {
			return &core.Rejection{Kind: core.RejectInvalidConfiguration, Message: fmt.Sprintf("client tool %q: that is the name of a built-in tool", t.Name)}
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(t.Parameters))
		if err != nil {
			return &core.Rejection{Kind: core.RejectInvalidConfiguration, Message: fmt.Sprintf("client tool %q: parameters: %v", t.Name, err)}
		}
		c := jsonschema.NewCompiler()
		// A schema names no other document: nothing is fetched.
		c.UseLoader(noLoader{})
		if err := c.AddResource(toolSchemaURL, doc); err != nil {
			return &core.Rejection{Kind: core.RejectInvalidConfiguration, Message: fmt.Sprintf("client tool %q: parameters: %v", t.Name, err)}
		}
		if _, err := c.Compile(toolSchemaURL); err != nil {
			return &core.Rejection{Kind: core.RejectInvalidConfiguration, Message: fmt.Sprintf("client tool %q: parameters are not a valid JSON Schema: %v", t.Name, err)}
		}
	}
	return nil
}

// toolSchemaURL names the schema being checked: an absolute URL, so that
// nothing resolves against the server's working directory (or names it in
// an error).
const toolSchemaURL = "https://cairn.invalid/tool-parameters.json"

// noLoader refuses every external schema a client tool's parameters
// might point at: a session/create must not make the server fetch URLs
// or read files.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("parameters may not refer to %s: a tool's schema is self-contained", url)
}

// The "tools" of session/create and session/read: the struct's fields
// plus the tool list in its wire form.

type createSessionJSON CreateSessionParams

// UnmarshalJSON is the lenient form, for decoders other than the API's.
func (p *CreateSessionParams) UnmarshalJSON(b []byte) error { return jsonv2.Unmarshal(b, p) }

func (p CreateSessionParams) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		createSessionJSON
		Tools []toolItem `json:"tools,omitempty"`
	}{createSessionJSON(p), toolItems(p.Tools, p.ClientTools)})
}

// UnmarshalJSONFrom decodes session/create's params with the decoder's
// own (strict) options.
func (p *CreateSessionParams) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var w struct {
		createSessionJSON `json:",inline"`
		Tools             []toolItem `json:"tools"`
	}
	if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	*p = CreateSessionParams(w.createSessionJSON)
	p.Tools, p.ClientTools = splitTools(w.Tools)
	return nil
}

type sessionReadJSON SessionReadResult

func (r SessionReadResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		sessionReadJSON
		Tools []toolItem `json:"tools,omitempty"`
	}{sessionReadJSON(r), toolItems(r.Tools, r.ClientTools)})
}

func (r *SessionReadResult) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var w struct {
		sessionReadJSON `json:",inline"`
		Tools           []toolItem `json:"tools"`
	}
	if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	*r = SessionReadResult(w.sessionReadJSON)
	r.Tools, r.ClientTools = splitTools(w.Tools)
	return nil
}

// UnmarshalJSON is the lenient form, for decoders other than the API's.
func (r *SessionReadResult) UnmarshalJSON(b []byte) error { return jsonv2.Unmarshal(b, r) }
