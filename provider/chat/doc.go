// Package chat is the adapter for the Chat Completions API kind
// (core.APIChatCompletions): OpenAI and the many compatible endpoints
// (DeepSeek, Groq, xAI, Ollama, …).
//
// It keeps the provider's native material in CAS and returns only facts and
// refs. One assistant response (choices[0].message) becomes, in this order:
//
//   - a reasoning entry (kind reasoning) when the message carries a
//     `reasoning_content` (DeepSeek, xAI) or `reasoning` (Groq) string.
//     Blob: ProviderKindReasoning, application/json,
//     {"field":"<the field name>","text":<the string exactly as received>}.
//   - a message entry (kind message, role assistant). Blob: ProviderKindMessage,
//     application/json: the message object itself, members in the order
//     received, minus `tool_calls` and the stored reasoning field. content,
//     refusal and annotations stay together here; every rawjson.Member's value keeps
//     its bytes (insignificant whitespace removed).
//   - one tool_call entry per tool call (CallID and ToolName set). Blob:
//     ProviderKindToolCall, application/json: the raw tool call object
//     ({"id","type","function":{"name","arguments"}}, plus anything else the
//     provider sent, e.g. DeepSeek's `index`). The decoded `function.arguments`
//     string is stored as its own blob (application/json when it parses, else
//     text/plain) and is the ToolCall's Arguments ref the tool executor reads.
//
// Lowering folds those entries back into one assistant message with only the
// fields a request accepts (role, content, refusal, tool_calls, name, audio,
// function_call); annotations stay in storage. Reasoning is re-sent only when
// the endpoint asks for it (endpoint.Endpoint.ReasoningField), because
// providers disagree about accepting it.
//
// Requests are written by a deterministic writer so that the same entries give
// the same bytes: turn N+1's body starts with turn N's messages, byte for byte,
// which is what provider prompt caches reward.
package chat

import "github.com/cairn-agents/cairn/core"

// Provider kinds of the blobs this adapter writes (content.ContentRef.ProviderKind).
const (
	ProviderKindMessage   = "openai.chat.message"
	ProviderKindToolCall  = "openai.chat.tool_call"
	ProviderKindReasoning = "openai.chat.reasoning"
)

// APIKind is the API kind this adapter speaks.
const APIKind = core.APIChatCompletions

// Native field names of reasoning on Chat Completions assistant messages.
const (
	fieldReasoningContent = "reasoning_content"
	fieldReasoning        = "reasoning"
)

// Failure kinds this adapter reports in provider.Output.Failure.
const (
	FailureMaxTokens     = "max_tokens"
	FailureContentFilter = "content_filter"
)
