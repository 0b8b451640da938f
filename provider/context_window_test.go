package provider_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/anthropic"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/responses"
)

// Every API kind's providerParams take contextWindow, a positive integer,
// and it is read back for run admission.
func TestEveryAPIKindTakesAContextWindowParam(t *testing.T) {
	validators := map[string]func(json.RawMessage) error{
		"chat_completions": chat.ValidateParams, "openai_responses": responses.ValidateParams, "anthropic_messages": anthropic.ValidateParams,
	}
	for kind, validate := range validators {
		if err := validate(json.RawMessage(`{"version":1,"contextWindow":32768}`)); err != nil {
			t.Errorf("%s refuses contextWindow: %v", kind, err)
		}
		for _, bad := range []string{`0`, `-5`, `1.5`, `"32k"`, `true`} {
			err := validate(json.RawMessage(`{"version":1,"contextWindow":` + bad + `}`))
			if err == nil || !strings.Contains(err.Error(), "contextWindow") {
				t.Errorf("%s takes contextWindow %s: %v", kind, bad, err)
			}
		}
	}
	if got := provider.ParamsContextWindow(json.RawMessage(`{"version":1,"stream":false,"contextWindow":32768}`)); got != 32768 {
		t.Errorf("ParamsContextWindow = %d", got)
	}
	for _, none := range []string{``, `null`, `{"version":1}`, `{"version":1,"contextWindow":null}`} {
		if got := provider.ParamsContextWindow(json.RawMessage(none)); got != 0 {
			t.Errorf("ParamsContextWindow(%s) = %d, want 0", none, got)
		}
	}
}
