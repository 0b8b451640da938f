package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// A typo in a tool name or a provider id, or a provider whose key the
// server lacks, is refused at session/create with a typed error naming it,
// not discovered at the first run (or never).
func TestServeRefusesUnknownToolsAndProvidersAtCreate(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	c := api.NewClient(startServeCommand(t), nil)
	ctx := context.Background()
	create := func(provider, kind string, tools ...string) error {
		_, err := c.CreateSession(ctx, api.CreateSessionParams{Model: core.ModelSelection{ProviderID: provider, APIKind: kind, Model: "m"}, Tools: tools})
		return err
	}
	for _, tc := range []struct {
		name, provider, kind string
		tools                []string
		want                 string
	}{
		{"tool typo", "openai", core.APIChatCompletions, []string{"vfs_read_file", "vfs_raed_file"}, `tools[1]: no tool "vfs_raed_file"`},
		{"unknown provider", "opnai", core.APIChatCompletions, nil, `unknown provider "opnai"`},
		{"kind the provider does not speak", "openai", core.APIAnthropicMessages, nil, `does not speak API kind "anthropic_messages"`},
		{"a provider without its key", "openai", core.APIChatCompletions, nil, "set OPENAI_API_KEY in the environment of `cairn serve`"},
	} {
		err := create(tc.provider, tc.kind, tc.tools...)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Kind() != core.RejectInvalidConfiguration || !strings.Contains(ae.Message, tc.want) {
			t.Errorf("%s: %v, want invalid_configuration naming %s", tc.name, err, tc.want)
		}
	}
	list, err := c.ListSessions(ctx, api.SessionListParams{})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("refused creates left sessions: %+v, %v", list, err)
	}
	t.Setenv("OPENAI_API_KEY", "sk-test") // read at each check, as before each call
	if err := create("openai", core.APIChatCompletions, "vfs_read_file"); err != nil {
		t.Fatalf("a known provider and tool with a key: %v", err)
	}
}
