package main

import (
	"encoding/json"
	"testing"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider/endpoint"
)

// A session's providerParams name its window first, then its provider
// record, then the built-in table.
func TestContextWindowPrecedence(t *testing.T) {
	r := endpoint.Static{"local": {BaseURL: "http://127.0.0.1:1/v1", ContextWindow: 8192}, "openai": {BaseURL: "https://api.openai.com/v1"}}
	local := core.ModelSelection{ProviderID: "local", APIKind: core.APIChatCompletions, Model: "gpt-4o"}
	openai := core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o"}
	for _, c := range []struct {
		model  core.ModelSelection
		params string
		want   int64
	}{
		{local, `{"version":1,"contextWindow":4096}`, 4096},
		{local, `{"version":1}`, 8192},
		{openai, ``, 128_000},
		{core.ModelSelection{ProviderID: "openai", Model: "my-fine-tune"}, ``, 0},
	} {
		if got := contextWindow(r, c.model, json.RawMessage(c.params)); got != c.want {
			t.Errorf("window of %s/%s with %s = %d, want %d", c.model.ProviderID, c.model.Model, c.params, got, c.want)
		}
	}
}
