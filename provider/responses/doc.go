// Package responses is the adapter for the OpenAI Responses API kind
// (core.APIOpenAIResponses): POST {BaseURL}/responses, non-streaming.
//
// It keeps the provider's native material in CAS and returns only facts and
// refs. Every item of a response's `output` array is stored as its own blob:
// the item object exactly as received (members in order, unknown fields kept,
// insignificant whitespace removed), media type application/json, provider
// kind ProviderKindItem. The entry kind says what the item is to the core:
//
//   - `message` → kind message, role assistant (role user for the user
//     messages a compact endpoint hands back). Content parts, annotations,
//     logprobs and refusals stay together in the item.
//   - `function_call` → kind tool_call, CallID = call_id, ToolName = name.
//     The decoded `arguments` string is also stored as its own blob
//     (application/json when it parses, else text/plain, no provider kind):
//     the core.ToolCall's Arguments, which the tool executor reads.
//   - `reasoning` → kind reasoning; `encrypted_content` and `summary` stay in
//     the item, so the item can be re-sent with `store: false`.
//   - `compaction` → kind compaction, no role. Its `encrypted_content` is
//     opaque; lowering re-sends the item as received.
//   - anything else — hosted tool calls (`web_search_call`,
//     `file_search_call`, …) and item types this package has never heard of —
//     → kind provider_opaque. The core never looks inside; lowering re-sends it.
//
// Lowering replays every stored item byte for byte, in context order, which is
// what the API asks for: each output item goes back as an input item, a
// reasoning item immediately followed by the item that followed it, every
// function_call answered by a function_call_output later in the same input.
//
// One exception: a reasoning item whose following item is gone (the core drops
// the tool calls of a failed generation) is left out, because the API rejects
// it alone and would reject every later request too.
//
// A response that ends incomplete, failed or cancelled sets
// provider.Output.Failure; the items are stored all the same. A refusal
// content part does not: the refusal is the answer (status completed), so
// its message is the turn's output, marked by ProjectMessage.
// The session's provider parameters (see ValidateParams) shape the rest of the
// request; by default it asks for `include: ["reasoning.encrypted_content"]`
// and `store: false`, and sends the session's prompt_cache_key.
//
// Requests are written by a deterministic writer, so the same entries give the
// same bytes and a context that only grew at its tail gives an `input` array
// that starts with the previous request's `input` bytes — the prefix provider
// prompt caches reward.
//
// # Compaction
//
// The Responses API compacts a conversation into a `compaction` item,
// {"type":"compaction","id":…,"encrypted_content":…} (output items may also
// carry `created_by`), an opaque stand-in for the conversation before it
// that is passed back as an input item like any other. Sources: OpenAI's
// compaction guide (developers.openai.com/api/docs/guides/compaction) and
// the request and response types of the official Go SDK, openai/openai-go,
// responses/response.go (ResponseNewParamsContextManagement,
// ResponseCompactParams, CompactedResponse, ResponseCompactionItem).
//
// Mode provider_triggered (core.CompactionProviderTriggered): the generation
// request carries `context_management`, an array of entries whose `type` is
// "compaction" (the only type the API defines) with an optional integer
// `compact_threshold`, a token count. When the rendered context crosses it,
// the provider compacts during the request and the response's `output`
// includes the compaction item, which Decode turns into a compaction entry.
// Pruning what it replaces is the core's business.
//
// Mode provider_standalone (core.CompactionProviderStandalone): Adapter
// implements provider.Compactor by POSTing to {BaseURL}/responses/compact.
// The endpoint takes `model` (required), `input`, `instructions`,
// `previous_response_id`, `prompt_cache_key` and a few caching and
// service-tier options; no tools. It answers with an object of type
// "response.compaction", {"id","object","created_at","output","usage"},
// whose `output` is the new window: the user messages it keeps, followed by
// one compaction item. Every output item becomes a replacement entry, in
// order.
//
// Assumptions, where the sources above say nothing (all made in compact.go):
//
//   - A policy without a threshold (ThresholdTokens 0) sends
//     [{"type":"compaction"}]: the SDK marks compact_threshold optional, so
//     the provider's default applies. No minimum is enforced here.
//   - The compact body is {"model","instructions"?,"input"} only: the
//     session's parameters (service tier, `extra`, …) are written for
//     generation requests and may name members the endpoint does not define.
//     Tools are not sent (the endpoint has no tools member) and neither is
//     targetTokens (it has no such setting) or prompt_cache_key.
//   - An answer without a compaction item, or with a function_call item (a
//     call without its output cannot stand in a replacement), is a
//     FailureCompaction, not an error.
//   - A compaction item's TokenEstimate is the usual byte heuristic over the
//     stored item; the provider reports no size for it.
//   - A session whose parameters set context_management through `extra`
//     keeps sending it; a provider_triggered policy replaces it (lower.go).
package responses

import "github.com/cairn-agents/cairn/core"

// APIKind is the API kind this adapter speaks.
const APIKind = core.APIOpenAIResponses

// ProviderKindItem is the provider kind (content.ContentRef.ProviderKind) of
// every blob holding one raw Responses output item. One kind suffices: the
// item's own `type` member says which item it is, and lowering treats all of
// them alike (replayed as stored).
const ProviderKindItem = "openai.responses.item"

// Failure kinds this adapter reports in provider.Output.Failure.
const (
	FailureMaxTokens     = "max_tokens"         // status incomplete, reason max_output_tokens
	FailureContentFilter = "content_filter"     // status incomplete, reason content_filter
	FailureIncomplete    = "incomplete"         // status incomplete for another reason
	FailureFailed        = "response_failed"    // status failed (the response's error is the message)
	FailureCancelled     = "response_cancelled" // status cancelled
)

// Native item types this package tells apart. Everything else is opaque.
const (
	itemMessage            = "message"
	itemFunctionCall       = "function_call"
	itemReasoning          = "reasoning"
	itemFunctionCallOutput = "function_call_output"
	itemCompaction         = "compaction"
)
