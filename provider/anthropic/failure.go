package anthropic

import (
	"fmt"
	"strings"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// failureInfo is a failed turn: the core.Failure kind and message, and the
// longer text stored as its Ref.
type failureInfo struct {
	kind, message, text string
}

// failureFor reports whether the last response ends the turn as failed.
func failureFor(last response, blocks int, info turnInfo) *failureInfo {
	head := fmt.Sprintf("Anthropic Messages response %s stopped with stop_reason %q.", orUnknown(last.id), last.stopReason)
	switch {
	case last.stopReason == stopRefusal:
		category, explanation := refusalDetails(last.stopDetails)
		msg := "the model refused the request"
		if explanation != "" {
			msg += ": " + explanation
		}
		var b strings.Builder
		b.WriteString(head + "\n")
		if category != "" {
			b.WriteString("Category: " + category + "\n")
		}
		if explanation != "" {
			b.WriteString("Explanation: " + explanation + "\n")
		}
		fmt.Fprintf(&b, "The refused output (%d content blocks) was discarded: Anthropic requires the refused turn to be removed before the conversation continues, so it is neither kept in context nor re-sent.\n", blocks)
		return &failureInfo{kind: FailureRefusal, message: bound(msg), text: b.String()}

	case last.stopReason == stopMaxTokens:
		limit := "its max_tokens limit"
		if info.maxTokens > 0 {
			limit = fmt.Sprintf("its max_tokens limit (%d)", info.maxTokens)
		}
		return &failureInfo{
			kind:    FailureMaxTokens,
			message: "the model stopped at " + limit,
			text: head + "\nThe model reached " + limit + " before finishing. The partial output stays in context without its unfinished tool calls. " +
				"Raise maxTokens in the session's provider parameters to allow longer turns.\n",
		}

	case last.stopReason == stopContextWindow:
		return &failureInfo{
			kind:    FailureContextWindow,
			message: "the model stopped at its context window limit",
			text: head + "\nThe conversation filled the model's context window before the answer was finished. The partial output stays in context without its unfinished tool calls. " +
				"Compact or trim the session's context before continuing.\n",
		}

	case info.pauseExhausted:
		return &failureInfo{
			kind:    FailurePauseLimit,
			message: fmt.Sprintf("the provider paused the turn more than %d times", MaxPauseContinuations),
			text: head + fmt.Sprintf("\nA long-running server tool loop paused the turn; Cairn continued it %d times, its limit, and stopped. ", MaxPauseContinuations) +
				"The output so far stays in context; a new run can continue from it.\n",
		}
	}
	return nil
}

// refusalDetails reads stop_details {"type":"refusal","category","explanation"}.
func refusalDetails(raw []byte) (category, explanation string) {
	if raw == nil {
		return "", ""
	}
	ms, err := rawjson.ObjectMembers(raw)
	if err != nil {
		return "", ""
	}
	category, _ = rawjson.String(rawjson.Lookup(ms, "category"))
	explanation, _ = rawjson.String(rawjson.Lookup(ms, "explanation"))
	return category, explanation
}

func orUnknown(id string) string {
	if id == "" {
		return "(no id)"
	}
	return id
}

// bound keeps Failure.Message short; the Ref holds the whole text.
func bound(s string) string { return provider.Preview(s) }
