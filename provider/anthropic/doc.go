// Package anthropic is the adapter for the Anthropic Messages API kind
// (core.APIAnthropicMessages): POST {BaseURL}/v1/messages with x-api-key and
// anthropic-version: 2023-06-01.
//
// # Storage
//
// The adapter keeps the provider's native content blocks in CAS, each stored
// as the compacted bytes it arrived as (rawjson: member order, string escapes
// and unknown fields kept; only insignificant whitespace removed), and
// returns facts and refs. One response's content array becomes, in order:
//
//   - a run of consecutive `text` blocks: ONE message entry (kind message,
//     role assistant). Blob: ProviderKindText, application/json, the JSON
//     array of those blocks exactly as received, `citations` included.
//   - each `thinking` block: a reasoning entry. Blob: ProviderKindThinking,
//     the block object (`thinking` and `signature` kept).
//   - each `redacted_thinking` block: a reasoning entry. Blob:
//     ProviderKindRedactedThinking, the block object (`data` kept).
//   - each `tool_use` block: a tool_call entry (CallID = id, ToolName =
//     name). Blob: ProviderKindToolUse, the block object (`caller` and any
//     other member kept). Its `input` value is also stored as its own
//     application/json blob, the core.ToolCall's Arguments.
//   - every other block (`server_tool_use`, `web_search_tool_result`,
//     `web_fetch_tool_result`, `mcp_tool_use`, block types that do not exist
//     yet, …): a provider_opaque entry. Blob: ProviderKindBlock, the block
//     object.
//
// Output-only envelope members (id, model, stop_reason, stop_details, usage,
// container, diagnostics) are facts, not context: they are not stored as
// entries.
//
// # Requests
//
// Lower is a pure function of the entries' bytes, the tools and the
// parameters. Instruction entries become `system` text blocks, in order.
// Everything else becomes `messages` with strict role alternation:
// consecutive entries of one role merge into one message, so the blocks of
// one response (and of its pause_turn continuations) fold back into one
// assistant message in their original order — thinking first, each server
// tool result beside its server_tool_use. Stored blocks are re-sent exactly
// as stored, except that `file_id` is dropped from citations (responses carry
// it, requests reject it). Tool results, and any user material beside them,
// form the next user message with every tool_result block first. An assistant
// message is never empty: one left with nothing but thinking (a failed
// output cut after its thinking) is not sent.
//
// Body layout: {"model","max_tokens", parameters…, extra…, "tools"?,
// "system"?, "messages"}: what is fixed for a session first, then Anthropic's
// cache hierarchy in its own order (tools, system, messages). A conversation
// that only grew at its tail therefore gives a body whose bytes through the
// previous request's last message are unchanged, and a changed instruction
// still leaves the tools' bytes in the shared prefix (see cache.go for how
// cache markers interact with that).
//
// # Stops
//
// `pause_turn` is continued inside Generate: the paused content is sent back
// as the trailing assistant message, up to MaxPauseContinuations times, and
// all responses' blocks are returned as one output. `refusal` fails the turn
// and returns no entries at all: Anthropic requires the refused turn to be
// removed before continuing, so nothing of it can be re-sent. `max_tokens`
// and `model_context_window_exceeded` fail the turn but keep the partial
// output, minus its unfinished tool calls. Every failure carries a
// human-readable text/plain blob as core.Failure.Ref.
package anthropic

import "github.com/cairn-agents/cairn/core"

// APIKind is the API kind this adapter speaks.
const APIKind = core.APIAnthropicMessages

// Provider kinds of the blobs this adapter writes (content.ContentRef.ProviderKind).
const (
	ProviderKindText             = "anthropic.messages.text"
	ProviderKindThinking         = "anthropic.messages.thinking"
	ProviderKindRedactedThinking = "anthropic.messages.redacted_thinking"
	ProviderKindToolUse          = "anthropic.messages.tool_use"
	ProviderKindBlock            = "anthropic.messages.block"
)

// Failure kinds this adapter reports in provider.Output.Failure.
const (
	FailureRefusal       = "refusal"
	FailureMaxTokens     = "max_tokens"
	FailureContextWindow = "context_window_exceeded"
	FailurePauseLimit    = "pause_turn_limit"
)

// AnthropicVersion is the anthropic-version header every request carries; the
// decoder is written against it.
const AnthropicVersion = "2023-06-01"

// DefaultMaxTokens is max_tokens when the parameters set none: the API
// requires the field, and 4096 suits an agent turn without letting a
// runaway answer bill for a model's full output window.
const DefaultMaxTokens = 4096

// MaxPauseContinuations bounds how often one generation continues after
// `pause_turn`; a server tool loop that pauses more often than this fails
// the turn with FailurePauseLimit rather than looping.
const MaxPauseContinuations = 5

// Native block types the adapter treats specially; any other type is opaque.
const (
	typeText             = "text"
	typeThinking         = "thinking"
	typeRedactedThinking = "redacted_thinking"
	typeToolUse          = "tool_use"
	typeToolResult       = "tool_result"
)

// Stop reasons that change what Generate does.
const (
	stopPauseTurn     = "pause_turn"
	stopRefusal       = "refusal"
	stopMaxTokens     = "max_tokens"
	stopContextWindow = "model_context_window_exceeded"
)
