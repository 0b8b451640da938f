package api

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
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
		params, err := jsonschema.ForType(m.params, nil)
		if err != nil {
			return nil, fmt.Errorf("%s params: %w", name, err)
		}
		result, err := jsonschema.ForType(m.result, nil)
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
