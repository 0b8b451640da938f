package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// DecodeError says why a response body could not be decoded.
type DecodeError = provider.DecodeError

// envelope holds only the facts the core branches on. The output items are
// read separately as raw bytes and never pass through a struct.
type envelope struct {
	ID                string `json:"id"`
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error json.RawMessage `json:"error"`
	Usage *struct {
		InputTokens        count `json:"input_tokens"`
		OutputTokens       count `json:"output_tokens"`
		InputTokensDetails *struct {
			CachedTokens     count `json:"cached_tokens"`
			CacheWriteTokens count `json:"cache_write_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails *struct {
			ReasoningTokens count `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

// usage maps the body's usage object; absent members are 0.
func (env *envelope) usage() core.Usage {
	u := env.Usage
	if u == nil {
		return core.Usage{}
	}
	out := core.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens)}
	if d := u.InputTokensDetails; d != nil {
		out.CachedInputTokens = int64(d.CachedTokens)
		out.CacheWriteTokens = int64(d.CacheWriteTokens)
	}
	if d := u.OutputTokensDetails; d != nil {
		out.ReasoningTokens = int64(d.ReasoningTokens)
	}
	return out
}

// count is a token count that tolerates null and a float spelling ("12.0"):
// compatible servers are not all careful about either, and a usage figure is
// not worth failing a generation over.
type count int64

func (c *count) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*c = count(n)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("token count %s is not a number", b)
	}
	*c = count(f)
	return nil
}

// Statuses of a response object.
const (
	statusIncomplete = "incomplete"
	statusFailed     = "failed"
	statusCancelled  = "cancelled"
)

// Decode stores every output item of one non-streaming Responses body in
// blobs and returns the resulting entries (in output order) and facts. See the
// package comment for what each item type becomes.
//
// Finish is the response's `status` ("completed", …), or "incomplete:<reason>"
// when incomplete_details names a reason.
func Decode(ctx context.Context, blobs blob.Store, body []byte) (provider.Output, error) {
	env, items, err := splitBody(body)
	if err != nil {
		return provider.Output{}, err
	}

	out := provider.Output{ResponseID: env.ID, Finish: env.Status}
	reason := ""
	if env.IncompleteDetails != nil {
		reason = env.IncompleteDetails.Reason
	}
	if env.Status == statusIncomplete && reason != "" {
		out.Finish = statusIncomplete + ":" + reason
	}
	out.Usage = env.usage()

	for i, raw := range items {
		e, call, err := decodeItem(ctx, blobs, raw)
		if err != nil {
			var se *storeError
			if errors.As(err, &se) {
				return provider.Output{}, err
			}
			return provider.Output{}, &DecodeError{API: "responses", Reason: fmt.Sprintf("output[%d]", i), Err: err}
		}
		out.Entries = append(out.Entries, e)
		if call != nil {
			out.ToolCalls = append(out.ToolCalls, *call)
		}
	}

	// A refusal is an answer (HTTP 200, status completed): its message is
	// the turn's output and is re-sent as received on a later request, which
	// the API accepts. Projections mark it (ProjectMessage).
	switch {
	case env.Status == statusIncomplete:
		out.Failure = incompleteFailure(reason)
	case env.Status == statusFailed:
		out.Failure = &core.Failure{Kind: FailureFailed, Message: failedMessage(env.Error)}
	case env.Status == statusCancelled:
		out.Failure = &core.Failure{Kind: FailureCancelled, Message: "the provider cancelled the response"}
	}
	return out, nil
}

// splitBody reads the facts of a response body (a generation's response
// object or the compact endpoint's compaction object: both carry `output`
// and `usage`) and returns its output items as raw bytes.
func splitBody(body []byte) (*envelope, [][]byte, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, nil, &DecodeError{API: "responses", Reason: "invalid response envelope", Err: err}
	}
	top, err := rawjson.ObjectMembers(body)
	if err != nil {
		return nil, nil, &DecodeError{API: "responses", Reason: "invalid response envelope", Err: err}
	}
	outputJSON := rawjson.Lookup(top, "output")
	if len(outputJSON) == 0 || outputJSON[0] != '[' {
		// Error bodies sent with 200 by some gateways land here.
		return nil, nil, &DecodeError{API: "responses", Reason: "response has no output array"}
	}
	items, err := rawjson.ArrayElements(outputJSON)
	if err != nil {
		return nil, nil, &DecodeError{API: "responses", Reason: "output", Err: err}
	}
	return &env, items, nil
}

func incompleteFailure(reason string) *core.Failure {
	switch reason {
	case "max_output_tokens":
		return &core.Failure{Kind: FailureMaxTokens, Message: "the model stopped at its output token limit"}
	case "content_filter":
		return &core.Failure{Kind: FailureContentFilter, Message: "the provider's content filter stopped the output"}
	case "":
		return &core.Failure{Kind: FailureIncomplete, Message: "the provider returned an incomplete response"}
	default:
		return &core.Failure{Kind: FailureIncomplete, Message: "the provider returned an incomplete response: " + reason}
	}
}

// failedMessage is the provider's explanation of a failed response, bounded.
// It is the provider's own text about the request, never request bytes.
func failedMessage(errJSON json.RawMessage) string {
	var e struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(errJSON, &e) == nil && e.Message != "" {
		return provider.Preview(e.Message)
	}
	return "the provider reported the response as failed"
}

// storeError marks a CAS failure, which is not the provider's fault and must
// not be reported as an undecodable response.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// decodeItem stores one raw output item and describes it. It returns the tool
// call when the item is a function_call.
func decodeItem(ctx context.Context, blobs blob.Store, raw []byte) (core.EntryInput, *core.ToolCall, error) {
	ms, err := rawjson.ObjectMembers(raw)
	if err != nil {
		return core.EntryInput{}, nil, err
	}
	typ, ok := rawjson.String(rawjson.Lookup(ms, "type"))
	if !ok || typ == "" {
		return core.EntryInput{}, nil, fmt.Errorf("item has no type")
	}

	switch typ {
	case itemMessage:
		visible, _ := visibleText(messageText(ms))
		role, _ := rawjson.String(rawjson.Lookup(ms, "role"))
		switch role {
		case core.RoleAssistant, "":
			role = core.RoleAssistant
		case core.RoleUser:
			// The compact endpoint returns the user messages it kept as
			// message items; they are native material like any other item.
		default:
			// A system or developer message is nothing the core has a role
			// for; keep it, replay it, do not interpret it.
			e, err := putItem(ctx, blobs, raw, core.EntryProviderOpaque, "", typ+" ("+role+")")
			return e, nil, err
		}
		e, err := putItem(ctx, blobs, raw, core.EntryMessage, role, visible)
		return e, nil, err

	case itemFunctionCall:
		callID, ok := rawjson.String(rawjson.Lookup(ms, "call_id"))
		if !ok || callID == "" {
			return core.EntryInput{}, nil, fmt.Errorf("function_call has no call_id")
		}
		name, ok := rawjson.String(rawjson.Lookup(ms, "name"))
		if !ok || name == "" {
			return core.EntryInput{}, nil, fmt.Errorf("function_call has no name")
		}
		argsRaw := rawjson.Lookup(ms, "arguments")
		args := "{}" // a call without arguments is a call with an empty object
		if !rawjson.IsNull(argsRaw) {
			if args, ok = rawjson.String(argsRaw); !ok {
				return core.EntryInput{}, nil, fmt.Errorf("function_call arguments is not a string")
			}
		}
		media := content.MediaText
		if json.Valid([]byte(args)) {
			media = content.MediaJSON
		}
		argsRef, err := blob.PutRef(ctx, blobs, []byte(args), media, "")
		if err != nil {
			return core.EntryInput{}, nil, &storeError{fmt.Errorf("responses: store arguments: %w", err)}
		}
		e, err := putItem(ctx, blobs, raw, core.EntryToolCall, core.RoleAssistant, name+"("+args+")")
		if err != nil {
			return core.EntryInput{}, nil, err
		}
		e.CallID, e.ToolName = callID, name
		return e, &core.ToolCall{CallID: callID, Name: name, Arguments: argsRef}, nil

	case itemReasoning:
		e, err := putItem(ctx, blobs, raw, core.EntryReasoning, core.RoleAssistant, reasoningText(ms))
		return e, nil, err

	case itemCompaction:
		// Opaque material that stands in for the conversation before it
		// (encrypted_content); replayed byte for byte, never interpreted.
		// It is no one's utterance, so it has no role.
		e, err := putItem(ctx, blobs, raw, core.EntryCompaction, "", compactionPreview(ms))
		return e, nil, err

	default:
		// web_search_call, file_search_call, … and types added
		// after this was written: kept whole and replayed, never interpreted.
		// The model produced them, hence the assistant role.
		e, err := putItem(ctx, blobs, raw, core.EntryProviderOpaque, core.RoleAssistant, typ)
		return e, nil, err
	}
}

// putItem stores one raw item and describes it as an entry.
func putItem(ctx context.Context, blobs blob.Store, raw []byte, kind, role, preview string) (core.EntryInput, error) {
	ref, err := blob.PutRef(ctx, blobs, raw, content.MediaJSON, ProviderKindItem)
	if err != nil {
		return core.EntryInput{}, &storeError{fmt.Errorf("responses: store %s item: %w", kind, err)}
	}
	return core.EntryInput{
		Kind:          kind,
		Role:          role,
		Content:       ref,
		TokenEstimate: provider.Estimate(raw),
		Preview:       provider.Preview(preview),
	}, nil
}
