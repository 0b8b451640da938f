package api

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cairn-agents/cairn/content"
)

// MethodDiscover answers the OpenRPC document of this API (OpenRPC's
// service discovery method).
const MethodDiscover = "rpc.discover"

// OpenRPCVersion is the OpenRPC specification the document follows;
// APIVersion is this API's version in it.
const (
	OpenRPCVersion = "1.3.2"
	APIVersion     = "1.0.0"
)

// commonErrors are the kinds every method may answer with.
var commonErrors = []string{KindInvalidParams, KindInternal, KindResponseTooLarge, KindUnauthorized}

// sessionErrors are the kinds every method that reads a session's log may
// answer with.
var sessionErrors = []string{KindNotFound, "history_incomplete"}

// errs declares the kinds of domain errors a method answers with besides
// commonErrors.
func (m method) errs(kinds ...string) method {
	m.errors = append(slices.Clone(m.errors), kinds...)
	return m
}

// session declares a method on one session: sessionErrors besides kinds.
func (m method) session(kinds ...string) method {
	return m.errs(append(slices.Clone(sessionErrors), kinds...)...)
}

// errorCode is the JSON-RPC code an error kind is answered with.
func errorCode(kind string) int {
	switch kind {
	case KindInvalidParams:
		return CodeInvalidParams
	case KindInternal:
		return CodeInternal
	}
	return CodeDomain
}

var (
	discoverOnce sync.Once
	discoverDoc  json.RawMessage
	discoverErr  error
)

// discover answers rpc.discover.
func (s call) discover(context.Context, struct{}) (json.RawMessage, error) {
	discoverOnce.Do(func() { discoverDoc, discoverErr = OpenRPCDocument() })
	return discoverDoc, discoverErr
}

// OpenRPCDocument is the OpenRPC document of the API, generated from the
// route table: each method's params (by name) and result as JSON Schema,
// and the error kinds it answers with. docs/openrpc.json is this document.
func OpenRPCDocument() (json.RawMessage, error) {
	table := routes()
	opts, err := schemaOptions()
	if err != nil {
		return nil, err
	}
	type contentDescriptor struct {
		Name     string             `json:"name"`
		Required bool               `json:"required,omitempty"`
		Schema   *jsonschema.Schema `json:"schema"`
	}
	type errorObject struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	}
	type methodObject struct {
		Name           string              `json:"name"`
		ParamStructure string              `json:"paramStructure"`
		Params         []contentDescriptor `json:"params"`
		Result         contentDescriptor   `json:"result"`
		Errors         []errorObject       `json:"errors"`
	}
	var methods []methodObject
	for _, name := range slices.Sorted(maps.Keys(table)) {
		m := table[name]
		params, err := jsonschema.ForType(m.params, opts)
		if err != nil {
			return nil, fmt.Errorf("%s params: %w", name, err)
		}
		result, err := jsonschema.ForType(m.result, opts)
		if err != nil {
			return nil, fmt.Errorf("%s result: %w", name, err)
		}
		mo := methodObject{Name: name, ParamStructure: "by-name", Params: []contentDescriptor{},
			Result: contentDescriptor{Name: "result", Schema: result}}
		for _, p := range params.PropertyOrder {
			mo.Params = append(mo.Params, contentDescriptor{Name: p, Required: slices.Contains(params.Required, p), Schema: params.Properties[p]})
		}
		kinds := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(commonErrors), m.errors...))))
		for _, k := range kinds {
			mo.Errors = append(mo.Errors, errorObject{Code: errorCode(k), Message: k, Data: map[string]any{"kind": k}})
		}
		methods = append(methods, mo)
	}
	doc := map[string]any{
		"openrpc": OpenRPCVersion,
		"info": map[string]any{"title": "Cairn", "version": APIVersion,
			"description": "Cairn's JSON-RPC 2.0 API, served at POST /rpc. An error's data.kind names it."},
		"servers": []map[string]any{{"name": "cairn serve", "url": "http://127.0.0.1:8420/rpc",
			"summary": "The default listen address; a hosted server's is its own, at /rpc."}},
		"methods": methods,
	}
	return json.MarshalIndent(doc, "", "  ")
}

// schemaOptions give the types whose JSON is their own (they marshal
// themselves) the schema of that JSON, which their Go fields do not tell.
// A test walks every method's types and fails on one that marshals
// itself without an entry here.
func schemaOptions() (*jsonschema.ForOptions, error) {
	opts := &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{}}
	give := func(t reflect.Type, s *jsonschema.Schema) { opts.TypeSchemas[t] = s }
	// either is a choice between schemas. A pointer to the type adds
	// "null" to a schema's types, so the choice names its types, null
	// among them (a null ref or output is "none" on the wire too).
	either := func(description string, types []string, alternatives ...*jsonschema.Schema) *jsonschema.Schema {
		return &jsonschema.Schema{Description: description, Types: append([]string{"null"}, types...),
			AnyOf: append([]*jsonschema.Schema{{Type: "null"}}, alternatives...)}
	}
	digest := &jsonschema.Schema{Type: "string", Pattern: "^sha256:[0-9a-f]{64}$", Description: "A content digest."}
	give(reflect.TypeFor[content.Digest](), digest)
	give(reflect.TypeFor[json.RawMessage](), &jsonschema.Schema{Description: "Any JSON value."})
	ref, err := jsonschema.ForType(reflect.TypeFor[content.ContentRef](), opts)
	if err != nil {
		return nil, err
	}
	give(reflect.TypeFor[content.ContentRef](), ref)
	refParam := either("A ref object as a result gave it, or its digest alone.", []string{"object", "string"}, ref, digest)
	give(reflect.TypeFor[RefParam](), refParam)
	give(reflect.TypeFor[ToolOutput](), either("The output's text, or the ref of its blob.", []string{"string", "object"}, &jsonschema.Schema{Type: "string"}, refParam))
	clientTool, err := jsonschema.ForType(reflect.TypeFor[ClientTool](), opts)
	if err != nil {
		return nil, err
	}
	tools := &jsonschema.Schema{Type: "array", Description: "Granted tools by name, and client tools by definition.",
		Items: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string"}, clientTool}}}
	// session/create's params and session/read's result: their fields,
	// with "tools" in its wire form.
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[CreateSessionParams](), reflect.TypeFor[createSessionJSON]()},
		{reflect.TypeFor[SessionReadResult](), reflect.TypeFor[sessionReadJSON]()},
	} {
		s, err := jsonschema.ForType(pair[1], opts)
		if err != nil {
			return nil, err
		}
		s.Properties["tools"] = tools
		s.PropertyOrder = append(s.PropertyOrder, "tools")
		give(pair[0], s)
	}
	return opts, nil
}
