package chat

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

var _ provider.Compactor = (*Adapter)(nil)

// Compact performs standalone compaction (provider_standalone) as a
// summarization request, POSTed to {BaseURL}/chat/completions like a
// generation; LowerCompact describes the body. The answer's text becomes one
// core.EntrySummary entry (text/plain, Origin provider.SummaryOrigin); the
// answer's message is kept in CAS as the entry's ProvenanceRef, a
// ProviderKindMessage blob exactly as Decode stores messages.
//
// An answer that is no usable summary (finish_reason "length", a refusal, a
// content filter stop, a tool call, or empty text) gives a CompactOutput
// with a provider.FailureCompaction Failure and a nil error; nothing is cut
// short and kept. Errors are as for Generate.
func (a *Adapter) Compact(ctx context.Context, blobs blob.Store, req provider.CompactRequest) (provider.CompactOutput, error) {
	if req.Model.APIKind != "" && req.Model.APIKind != APIKind {
		return provider.CompactOutput{}, fmt.Errorf("chat: model selection has API kind %q, want %q", req.Model.APIKind, APIKind)
	}
	if len(req.Entries) == 0 {
		return provider.CompactOutput{Failure: &core.Failure{Kind: provider.FailureCompaction, Message: "there are no entries to compact"}}, nil
	}
	ep, err := endpoint.ResolveFor(a.resolver, req.Model.ProviderID, APIKind)
	if err != nil {
		return provider.CompactOutput{}, fmt.Errorf("chat: %w", err)
	}
	body, err := LowerCompact(ctx, blobs, req, LowerOptions{ReasoningField: ep.ReasoningField})
	if err != nil {
		return provider.CompactOutput{}, err
	}
	resp, err := a.post(ctx, ep, net.Buffers{body}, nil)
	if err != nil {
		return provider.CompactOutput{}, err
	}
	out, err := decodeSummary(ctx, blobs, resp, provider.SummaryTokens(req.TargetTokens))
	if err != nil {
		return provider.CompactOutput{}, decodeFailure(err, ep)
	}
	return out, nil
}

// LowerCompact builds the summarization request body for req. Like Lower it
// only reads blobs and is a pure function of its input. Layout:
//
//	{"model",
//	 "messages": [{"role":"system","content":<summary instructions>},
//	              <the entries, lowered as Lower lowers them>,
//	              {"role":"user","content":<summary prompt>}],
//	 "tools"?, "tool_choice":"none"?,
//	 "max_completion_tokens": <budget>,
//	 "prompt_cache_key"?}
//
// The budget is provider.SummaryTokens(req.TargetTokens): the output limit
// and the length the instructions ask for. Tools are sent only when the
// history holds tool calls or results (providers validate such a history
// against the tool definitions); a tool the history used that is no longer
// among req.Tools gets a bare definition, and tool_choice "none" keeps the
// model from calling any. prompt_cache_key is the session's, as in Lower.
func LowerCompact(ctx context.Context, blobs blob.Store, req provider.CompactRequest, opts LowerOptions) ([]byte, error) {
	if req.Model.Model == "" {
		return nil, fmt.Errorf("chat: request has no model")
	}
	budget := provider.SummaryTokens(req.TargetTokens)
	msgs, err := lowerMessages(ctx, blobs, req.Entries, opts)
	if err != nil {
		return nil, err
	}
	tools := compactTools(req.Entries, req.Tools)

	var buf bytes.Buffer
	buf.WriteString(`{"model":`)
	rawjson.WriteString(&buf, req.Model.Model)
	buf.WriteString(`,"messages":[{"role":"system","content":`)
	rawjson.WriteString(&buf, provider.SummaryInstructions(budget))
	buf.WriteByte('}')
	for _, m := range msgs {
		buf.WriteByte(',')
		buf.Write(m)
	}
	buf.WriteString(`,{"role":"user","content":`)
	rawjson.WriteString(&buf, provider.SummaryPrompt(budget))
	buf.WriteString(`}]`)
	if len(tools) > 0 {
		buf.WriteString(`,"tools":[`)
		for i, t := range tools {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeTool(&buf, t); err != nil {
				return nil, err
			}
		}
		buf.WriteString(`],"tool_choice":"none"`)
	}
	buf.WriteString(`,"max_completion_tokens":`)
	buf.WriteString(strconv.FormatInt(budget, 10))
	if key := provider.PromptCacheKey(req.SessionID); key != "" {
		buf.WriteString(`,"prompt_cache_key":`)
		rawjson.WriteString(&buf, key)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// compactTools returns the tools a summarization request of entries must
// define: none when no entry is a tool call or result; otherwise tools,
// followed by a bare definition for every called tool that tools lacks, in
// order of first call.
func compactTools(entries []core.Entry, tools []provider.Tool) []provider.Tool {
	defined := make(map[string]bool, len(tools))
	for _, t := range tools {
		defined[t.Name] = true
	}
	var (
		used  bool
		extra []provider.Tool
	)
	for _, e := range entries {
		switch e.Kind {
		case core.EntryToolResult:
			used = true
		case core.EntryToolCall:
			used = true
			if e.ToolName != "" && !defined[e.ToolName] {
				defined[e.ToolName] = true
				extra = append(extra, provider.Tool{Name: e.ToolName})
			}
		}
	}
	if !used {
		return nil
	}
	return append(tools[:len(tools):len(tools)], extra...)
}

// decodeSummary turns a summarization response into the compaction output.
func decodeSummary(ctx context.Context, blobs blob.Store, body []byte, budget int64) (provider.CompactOutput, error) {
	c, err := parseCompletion(body)
	if err != nil {
		return provider.CompactOutput{}, err
	}
	out := provider.CompactOutput{Usage: c.usage}
	text, refusal := messageText(c.kept)
	calls := !rawjson.IsNull(c.toolCalls) && string(c.toolCalls) != "[]"
	if !rawjson.IsNull(rawjson.Lookup(c.kept, "function_call")) {
		calls = true
	}

	var message string
	switch {
	case refusal != "":
		message = "the model refused to summarize the conversation: " + refusal
	case c.finish == "length":
		message = fmt.Sprintf("the summary reached its output limit (%d tokens) before it was finished; raise the compaction's targetTokens", budget)
	case c.finish == "content_filter":
		message = "the provider's content filter stopped the summary"
	case calls || c.finish == "tool_calls" || c.finish == "function_call":
		message = "the model called a tool instead of writing the summary"
	case strings.TrimSpace(text) == "":
		message = "the model returned an empty summary"
	}
	if message != "" {
		out.Failure = &core.Failure{Kind: provider.FailureCompaction, Message: provider.Preview(message)}
		return out, nil
	}

	var mbuf bytes.Buffer
	rawjson.WriteObject(&mbuf, c.kept)
	entry, err := provider.SummaryEntry(ctx, blobs, text, mbuf.Bytes(), ProviderKindMessage)
	if err != nil {
		return provider.CompactOutput{}, fmt.Errorf("chat: %w", err)
	}
	out.Entries = []core.EntryInput{entry}
	return out, nil
}
