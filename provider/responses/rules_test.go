package responses

import (
	"encoding/json"
	"fmt"
)

// inputViolation checks an input array against the rules the Responses API
// enforces on replayed items (see the shared payload README) and returns the
// API's error message for the first one broken, or "". The fake server
// answers 400 with it, so adapter tests fail the way a real request would.
func inputViolation(input []json.RawMessage) string {
	type item struct {
		Type   string `json:"type"`
		ID     string `json:"id"`
		Role   string `json:"role"`
		CallID string `json:"call_id"`
	}
	items := make([]item, len(input))
	for i, raw := range input {
		if err := json.Unmarshal(raw, &items[i]); err != nil {
			return fmt.Sprintf("Invalid input[%d]: %v", i, err)
		}
	}
	calls := map[string]bool{}
	for i, it := range items {
		switch it.Type {
		case itemReasoning:
			if i+1 == len(items) || !isOutputItem(items[i+1].Type, items[i+1].Role) {
				return fmt.Sprintf("Item '%s' of type 'reasoning' was provided without its required following item.", it.ID)
			}
		case itemFunctionCall:
			calls[it.CallID] = true
			answered := false
			for _, later := range items[i+1:] {
				if later.Type == itemFunctionCallOutput && later.CallID == it.CallID {
					answered = true
					break
				}
			}
			if !answered {
				return "No tool output found for function call " + it.CallID + "."
			}
		case itemFunctionCallOutput:
			if !calls[it.CallID] {
				return "No tool call found for function call output with call_id " + it.CallID + "."
			}
		}
	}
	return ""
}

// isOutputItem: an item the model produced (what may follow a reasoning item).
func isOutputItem(typ, role string) bool {
	switch {
	case typ == "" || typ == itemFunctionCallOutput:
		return false
	case typ == itemMessage:
		return role == "assistant"
	}
	return true
}
