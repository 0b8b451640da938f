package provider

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/cairn-agents/cairn/provider/rawjson"
)

// ContextWindowParam is the providerParams member every API kind takes to
// tell Cairn its model's context window in tokens, when neither the
// provider record nor the built-in table knows it (a local model, a
// fine-tune). It is read at run admission and never sent to the provider.
const ContextWindowParam = "contextWindow"

// ParseContextWindow checks a contextWindow value: a positive integer.
func ParseContextWindow(v []byte) (int64, error) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("must be a positive whole number of tokens")
	}
	return n, nil
}

// ParamsContextWindow is the contextWindow of a session's providerParams;
// 0 when they give none (they were validated at admission).
func ParamsContextWindow(params json.RawMessage) int64 {
	ms, err := rawjson.ObjectMembers(params)
	if err != nil {
		return 0
	}
	for _, m := range ms {
		if m.Name == ContextWindowParam {
			n, _ := ParseContextWindow(m.Value)
			return n
		}
	}
	return 0
}
