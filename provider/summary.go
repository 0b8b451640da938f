package provider

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"

	"github.com/cairn-agents/cairn/core"
)

// Standalone compaction by summary (the Anthropic Messages and Chat
// Completions adapters): the conversation to compact is sent as it is, with
// SummaryInstructions as the system text and SummaryPrompt as a final user
// message; the answer's text becomes one core.EntrySummary entry.

// DefaultSummaryTokens is the summary budget when CompactRequest.TargetTokens
// is 0: guidance in the instructions and the request's output limit.
const DefaultSummaryTokens = 2048

// SummaryOrigin is the Origin of the summary entries compaction writes.
const SummaryOrigin = "compaction"

// FailureCompaction is the core.Failure kind of a compaction that produced
// no usable replacement (a refusal, a summary cut at the output limit, an
// empty summary, no compaction item).
const FailureCompaction = core.FailureCompaction

// SummaryTokens is the budget for target: target itself, or
// DefaultSummaryTokens when target is not positive.
func SummaryTokens(target int64) int64 {
	if target <= 0 {
		return DefaultSummaryTokens
	}
	return target
}

// SummaryInstructions is the system text of a summarization request for a
// summary of about tokens tokens (pass SummaryTokens' result).
func SummaryInstructions(tokens int64) string {
	n := strconv.FormatInt(tokens, 10)
	return "You are compacting the context of an agent's working session. The conversation that follows will be " +
		"removed from the model's context and replaced by the summary you write; the work then continues from that " +
		"summary, the agent's instructions and its tools, with no other access to this conversation.\n\n" +
		"Write a summary that lets the work continue without loss. Keep:\n" +
		"- the user's goals and requests, and the constraints and preferences they stated;\n" +
		"- decisions made, and why;\n" +
		"- facts established, with exact identifiers: file paths, names of functions and other symbols, commands, URLs, versions, error messages;\n" +
		"- the results of tool calls that still matter, stated as facts;\n" +
		"- work completed, and the tasks still open or next steps, in order;\n" +
		"- questions still waiting for an answer.\n" +
		"Leave out what no longer matters: superseded attempts, errors already resolved, pleasantries.\n\n" +
		"Do not call tools, do not continue the conversation and do not answer its last message. Reply with the summary " +
		"only, in plain text, without a preamble, in the language of the conversation. Keep it to about " + n +
		" tokens; it must be complete within that length."
}

// SummaryPrompt is the final user message of a summarization request.
func SummaryPrompt(tokens int64) string {
	return "Summarize the conversation so far now, following your instructions: the summary replaces the conversation " +
		"for continuing the work. Plain text, about " + strconv.FormatInt(tokens, 10) + " tokens."
}

// SummaryEntry stores a summary's text (the model input) and the native
// answer it came from (its provenance), and describes the summary entry.
func SummaryEntry(ctx context.Context, blobs blob.Store, text string, native []byte, providerKind string) (core.EntryInput, error) {
	nativeRef, err := blob.PutRef(ctx, blobs, native, content.MediaJSON, providerKind)
	if err != nil {
		return core.EntryInput{}, fmt.Errorf("store %s: %w", providerKind, err)
	}
	ref, err := blob.PutRef(ctx, blobs, []byte(text), content.MediaText, "")
	if err != nil {
		return core.EntryInput{}, fmt.Errorf("store summary: %w", err)
	}
	return core.EntryInput{Kind: core.EntrySummary, Content: ref, TokenEstimate: Estimate([]byte(text)),
		Preview: Preview(text), Origin: SummaryOrigin, ProvenanceRef: &nativeRef}, nil
}
