package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairn-agents/cairn/api"
)

var updateOpenRPC = flag.Bool("update-openrpc", false, "rewrite docs/openrpc.json from the route table")

const openRPCFile = "../docs/openrpc.json"

// docs/openrpc.json is the document the server generates: change a
// method's params, result or errors and this fails until the file is
// regenerated (go test ./api -run OpenRPC -update-openrpc).
func TestOpenRPCDocumentIsCheckedIn(t *testing.T) {
	doc, err := api.OpenRPCDocument()
	if err != nil {
		t.Fatal(err)
	}
	doc = append(doc, '\n')
	if *updateOpenRPC {
		if err := os.WriteFile(openRPCFile, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile(openRPCFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, doc) {
		t.Fatalf("%s differs from the route table's document: regenerate it with go test ./api -run OpenRPC -update-openrpc", openRPCFile)
	}
	var d struct {
		Methods []struct {
			Name   string `json:"name"`
			Params []struct {
				Name string `json:"name"`
			} `json:"params"`
			Errors []struct {
				Code int `json:"code"`
				Data struct {
					Kind string `json:"kind"`
				} `json:"data"`
			} `json:"errors"`
		} `json:"methods"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Methods) != len(api.MethodNames()) {
		t.Fatalf("%d methods in the document, %d served", len(d.Methods), len(api.MethodNames()))
	}
	for _, m := range d.Methods {
		if m.Name != api.MethodSessionCreate {
			continue
		}
		var params, kinds []string
		for _, p := range m.Params {
			params = append(params, p.Name)
		}
		for _, e := range m.Errors {
			kinds = append(kinds, e.Data.Kind)
		}
		if !strings.HasPrefix(strings.Join(params, ","), "sessionId,model,") || !strings.Contains(strings.Join(kinds, ","), "session_exists") {
			t.Fatalf("session/create: params %v, errors %v", params, kinds)
		}
	}
}

// The document is an OpenRPC document: it validates against the OpenRPC
// meta-schema (the npm package scripts/services.sh installs).
func TestOpenRPCDocumentValidates(t *testing.T) {
	path := os.Getenv("CAIRN_TEST_OPENRPC_SCHEMA")
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CAIRN_TEST_OPENRPC_SCHEMA is not set: scripts/test installs the OpenRPC meta-schema")
		}
		t.Skip("CAIRN_TEST_OPENRPC_SCHEMA is not set (scripts/test sets it)")
	}
	raw, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	// The package names its own URL for JSON Schema itself, draft 7's
	// meta-schema (schema objects are checked against it), which the
	// validator has built in under draft 7's own URL.
	for _, u := range []string{"https://meta.json-schema.tools/#/definitions/JSONSchemaObject", "https://meta.json-schema.tools/#", "https://meta.json-schema.tools/", "https://meta.json-schema.tools"} {
		raw = bytes.ReplaceAll(raw, []byte(`"`+u), []byte(`"http://json-schema.org/draft-07/schema#`))
	}
	var meta map[string]any
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("https://meta.open-rpc.org/", meta); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("https://meta.open-rpc.org/")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := api.OpenRPCDocument()
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(inst); err != nil {
		t.Fatalf("the document is not valid OpenRPC: %v", err)
	}
}

// rpc.discover answers the document.
func TestRPCDiscover(t *testing.T) {
	e := newEnv(t)
	var got json.RawMessage
	if err := e.c.Call(context.Background(), api.MethodDiscover, map[string]any{}, &got); err != nil {
		t.Fatal(err)
	}
	want, _ := api.OpenRPCDocument()
	var g, w any
	if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil || !jsonEqual(g, w) {
		t.Fatalf("rpc.discover answered %.300s", got)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
