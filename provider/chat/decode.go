package chat

import (
	"bytes"
	"context"
	"encoding/json"
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

// envelope holds only the facts the core branches on; the message itself is
// kept as raw bytes and never passes through a struct.
type envelope struct {
	ID      string `json:"id"`
	Choices []struct {
		FinishReason *string         `json:"finish_reason"`
		Message      json.RawMessage `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     count `json:"prompt_tokens"`
		CompletionTokens count `json:"completion_tokens"`
		PromptCacheHit   count `json:"prompt_cache_hit_tokens"` // DeepSeek
		PromptDetails    *struct {
			CachedTokens count `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionDetails *struct {
			ReasoningTokens count `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

// count is a token count that tolerates null and a float spelling ("12.0"),
// because compatible servers are not all careful about either.
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

// completion is a parsed response: its facts and choices[0].message split
// into the members kept together as the message blob, the reasoning member
// (nil when none) and the raw tool_calls value (nil when none).
type completion struct {
	id, finish string
	usage      core.Usage
	kept       []rawjson.Member
	reasoning  *rawjson.Member
	toolCalls  []byte
}

// parseCompletion reads a response body's facts and splits its first choice's
// message; nothing is stored.
func parseCompletion(body []byte) (completion, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return completion{}, &DecodeError{API: "chat", Reason: "invalid response envelope", Err: err}
	}
	if len(env.Choices) == 0 {
		return completion{}, &DecodeError{API: "chat", Reason: "response has no choices"}
	}
	choice := env.Choices[0]
	msg, err := rawjson.ObjectMembers(choice.Message)
	if err != nil {
		return completion{}, &DecodeError{API: "chat", Reason: "choices[0].message", Err: err}
	}

	c := completion{id: env.ID}
	if choice.FinishReason != nil {
		c.finish = *choice.FinishReason
	}
	if u := env.Usage; u != nil {
		c.usage = core.Usage{InputTokens: int64(u.PromptTokens), OutputTokens: int64(u.CompletionTokens)}
		if u.PromptDetails != nil {
			c.usage.CachedInputTokens = int64(u.PromptDetails.CachedTokens)
		}
		if c.usage.CachedInputTokens == 0 {
			c.usage.CachedInputTokens = int64(u.PromptCacheHit)
		}
		if u.CompletionDetails != nil {
			c.usage.ReasoningTokens = int64(u.CompletionDetails.ReasoningTokens)
		}
	}

	// Split the message: reasoning and tool calls become their own entries,
	// everything else stays together as the message blob.
	for i := range msg {
		m := msg[i]
		switch m.Name {
		case "tool_calls":
			c.toolCalls = m.Value
			continue
		case fieldReasoningContent, fieldReasoning:
			if s, ok := rawjson.String(m.Value); ok && s != "" && c.reasoning == nil {
				c.reasoning = &msg[i]
				continue
			}
			if rawjson.IsNull(m.Value) || string(m.Value) == `""` {
				continue // carries nothing; dropping it loses nothing
			}
			// A second or non-string reasoning value stays in the message blob:
			// unexpected material is kept, not thrown away.
		}
		c.kept = append(c.kept, m)
	}
	return c, nil
}

// Decode stores one non-streaming Chat Completions response body in blobs and
// returns its entries and facts. See the package comment for the blob formats.
func Decode(ctx context.Context, blobs blob.Store, body []byte) (provider.Output, error) {
	c, err := parseCompletion(body)
	if err != nil {
		return provider.Output{}, err
	}
	out := provider.Output{ResponseID: c.id, Finish: c.finish, Usage: c.usage}
	kept, reasoning, toolCallsJSON := c.kept, c.reasoning, c.toolCalls

	if reasoning != nil {
		var buf bytes.Buffer
		buf.WriteString(`{"field":`)
		rawjson.WriteString(&buf, reasoning.Name)
		buf.WriteString(`,"text":`)
		buf.Write(reasoning.Value)
		buf.WriteByte('}')
		text, _ := rawjson.String(reasoning.Value)
		e, err := putEntry(ctx, blobs, buf.Bytes(), ProviderKindReasoning, core.EntryReasoning, text)
		if err != nil {
			return provider.Output{}, err
		}
		out.Entries = append(out.Entries, e)
	}

	var mbuf bytes.Buffer
	rawjson.WriteObject(&mbuf, kept)
	visible, _ := visibleText(messageText(kept))
	me, err := putEntry(ctx, blobs, mbuf.Bytes(), ProviderKindMessage, core.EntryMessage, visible)
	if err != nil {
		return provider.Output{}, err
	}
	out.Entries = append(out.Entries, me)

	if !rawjson.IsNull(toolCallsJSON) {
		calls, err := rawjson.ArrayElements(toolCallsJSON)
		if err != nil {
			return provider.Output{}, &DecodeError{API: "chat", Reason: "message.tool_calls", Err: err}
		}
		for i, raw := range calls {
			e, call, err := decodeToolCall(ctx, blobs, raw)
			if err != nil {
				return provider.Output{}, &DecodeError{API: "chat", Reason: fmt.Sprintf("message.tool_calls[%d]", i), Err: err}
			}
			out.Entries = append(out.Entries, e)
			out.ToolCalls = append(out.ToolCalls, call)
		}
	}

	// A refusal is an answer (HTTP 200, finish_reason stop): its message is
	// the turn's output, re-sent on later requests; projections mark it
	// (ProjectMessage).
	switch {
	case out.Finish == "length":
		out.Failure = &core.Failure{Kind: FailureMaxTokens, Message: "the model stopped at its output token limit"}
	case out.Finish == "content_filter":
		out.Failure = &core.Failure{Kind: FailureContentFilter, Message: "the provider's content filter stopped the output"}
	}
	return out, nil
}

// decodeToolCall stores one raw tool call object and its arguments.
func decodeToolCall(ctx context.Context, blobs blob.Store, raw []byte) (core.EntryInput, core.ToolCall, error) {
	ms, err := rawjson.ObjectMembers(raw)
	if err != nil {
		return core.EntryInput{}, core.ToolCall{}, err
	}
	id, ok := rawjson.String(rawjson.Lookup(ms, "id"))
	if !ok || id == "" {
		return core.EntryInput{}, core.ToolCall{}, fmt.Errorf("missing id")
	}
	fn, err := rawjson.ObjectMembers(rawjson.Lookup(ms, "function"))
	if err != nil {
		return core.EntryInput{}, core.ToolCall{}, fmt.Errorf("function: %w", err)
	}
	name, ok := rawjson.String(rawjson.Lookup(fn, "name"))
	if !ok || name == "" {
		return core.EntryInput{}, core.ToolCall{}, fmt.Errorf("missing function.name")
	}
	argsRaw := rawjson.Lookup(fn, "arguments")
	args := "{}" // a call without arguments is a call with an empty object
	if !rawjson.IsNull(argsRaw) {
		if args, ok = rawjson.String(argsRaw); !ok {
			return core.EntryInput{}, core.ToolCall{}, fmt.Errorf("function.arguments is not a string")
		}
	}
	media := content.MediaText
	if json.Valid([]byte(args)) {
		media = content.MediaJSON
	}
	argsRef, err := blob.PutRef(ctx, blobs, []byte(args), media, "")
	if err != nil {
		return core.EntryInput{}, core.ToolCall{}, err
	}
	e, err := putEntry(ctx, blobs, raw, ProviderKindToolCall, core.EntryToolCall, name+"("+args+")")
	if err != nil {
		return core.EntryInput{}, core.ToolCall{}, err
	}
	e.CallID, e.ToolName = id, name
	return e, core.ToolCall{CallID: id, Name: name, Arguments: argsRef}, nil
}

// putEntry stores native bytes and describes them as an assistant entry.
func putEntry(ctx context.Context, blobs blob.Store, data []byte, providerKind, kind, preview string) (core.EntryInput, error) {
	ref, err := blob.PutRef(ctx, blobs, data, content.MediaJSON, providerKind)
	if err != nil {
		return core.EntryInput{}, fmt.Errorf("chat: store %s: %w", providerKind, err)
	}
	return core.EntryInput{
		Kind:          kind,
		Role:          core.RoleAssistant,
		Content:       ref,
		TokenEstimate: provider.Estimate(data),
		Preview:       provider.Preview(preview),
	}, nil
}
