package anthropic

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

var _ provider.Compactor = (*Adapter)(nil)

// Standalone compaction (provider_standalone) on Anthropic Messages is a
// summarization request:
//
//	{"model", "max_tokens": <budget>, temperature/top_p/top_k/service_tier
//	 as the session sets them, extra minus tool_choice and stop_sequences,
//	 "tool_choice": {"type":"none"}?, "tools"?, "system": [<instructions>],
//	 "messages": [<the entries, lowered as Generate lowers them>,
//	              …, user: <summary prompt>]}
//
// The budget is provider.SummaryTokens(TargetTokens): the output limit and
// the length the instructions ask for. Thinking is off (the session's
// thinking parameter is not sent). Tools are sent only when the history
// holds tool_use or tool_result blocks, which the API refuses without tool
// definitions; a tool the history used that is no longer among req.Tools
// gets a bare definition ({"name","input_schema":{"type":"object"}}), and
// tool_choice "none" keeps the model from calling any. The request carries
// no cache markers: its prefix (summarization instructions) is shared with
// no generation request, so writing it to the cache would only cost.

// compactExtraDropped are session extra members a summarization request
// does not send: it chooses tools itself, and a stop sequence would cut the
// summary short.
var compactExtraDropped = map[string]bool{"tool_choice": true, "stop_sequences": true}

// Compact summarizes req.Entries into one core.EntrySummary entry (text/plain,
// Origin provider.SummaryOrigin). The response's text blocks are kept in CAS
// as the entry's ProvenanceRef, a ProviderKindText blob as Generate stores
// text runs. A response that is no usable summary (stopped at max_tokens,
// refused, stopped for any reason but end_turn, calling a tool, or empty)
// gives a CompactOutput with a FailureCompaction Failure, whose Ref is a
// text/plain explanation, and a nil error. Errors are as for Generate.
func (a *Adapter) Compact(ctx context.Context, blobs blob.Store, req provider.CompactRequest) (provider.CompactOutput, error) {
	if req.Model.APIKind != "" && req.Model.APIKind != APIKind {
		return provider.CompactOutput{}, fmt.Errorf("anthropic: model selection has API kind %q, want %q", req.Model.APIKind, APIKind)
	}
	p, err := parseParams(req.Params)
	if err != nil {
		return provider.CompactOutput{}, err
	}
	budget := provider.SummaryTokens(req.TargetTokens)
	if len(req.Entries) == 0 {
		return provider.CompactOutput{Failure: &core.Failure{Kind: provider.FailureCompaction, Message: "there are no entries to compact"}}, nil
	}
	ep, err := endpoint.ResolveFor(a.resolver, req.Model.ProviderID, APIKind)
	if err != nil {
		return provider.CompactOutput{}, fmt.Errorf("anthropic: %w", err)
	}
	body, err := lowerCompact(ctx, blobs, req, p)
	if err != nil {
		return provider.CompactOutput{}, err
	}
	raw, err := a.post(ctx, ep, net.Buffers{body}, nil) // a summary nobody watches: asked for whole
	if err != nil {
		return provider.CompactOutput{}, decodeFailure(err, ep)
	}
	r, err := parseResponse(raw)
	if err != nil {
		return provider.CompactOutput{}, decodeFailure(err, ep)
	}
	out, err := decodeSummary(ctx, blobs, r, budget)
	if err != nil {
		return provider.CompactOutput{}, decodeFailure(err, ep)
	}
	return out, nil
}

// LowerCompact builds the summarization request body for req (see Compact).
// Like Lower it only reads blobs and is a pure function of its input.
func LowerCompact(ctx context.Context, blobs blob.Store, req provider.CompactRequest) ([]byte, error) {
	p, err := parseParams(req.Params)
	if err != nil {
		return nil, err
	}
	return lowerCompact(ctx, blobs, req, p)
}

func lowerCompact(ctx context.Context, blobs blob.Store, req provider.CompactRequest, p params) ([]byte, error) {
	budget := provider.SummaryTokens(req.TargetTokens)
	conv, err := lowerContext(ctx, blobs, req.Entries, nil)
	if err != nil {
		return nil, err
	}
	system := make([]block, 0, len(conv.system)+1)
	conv.system = append(append(system, textBlock(provider.SummaryInstructions(budget))), conv.system...)
	conv.messages = normalize(appendBlocks(conv.messages, roleUser, []block{textBlock(provider.SummaryPrompt(budget))}))

	tools, err := compactTools(conv, req.Tools)
	if err != nil {
		return nil, err
	}
	return conv.body(req.Model.Model, compactParams(p, budget, len(tools) > 0), tools)
}

// compactParams are the session's parameters as a summarization request
// uses them.
func compactParams(p params, budget int64, withTools bool) params {
	q := p
	q.maxTokens = budget
	q.thinking, q.thinkingBudget = nil, 0
	q.uncached = true
	q.extra = nil
	for _, x := range p.extra {
		if !compactExtraDropped[x.Name] {
			q.extra = append(q.extra, x)
		}
	}
	if withTools {
		q.extra = append(q.extra, rawjson.Member{Name: "tool_choice", RawName: []byte(`"tool_choice"`), Value: []byte(`{"type":"none"}`)})
	}
	return q
}

// compactTools returns the tools a summarization request of conv must
// define: none when no message holds a tool_use or tool_result block;
// otherwise tools, followed by a bare definition for every tool a tool_use
// block names that tools lacks, in order of first use.
func compactTools(conv conversation, tools []provider.Tool) ([]provider.Tool, error) {
	defined := make(map[string]bool, len(tools))
	for _, t := range tools {
		defined[t.Name] = true
	}
	var (
		used  bool
		extra []provider.Tool
	)
	for _, m := range conv.messages {
		for _, b := range m.blocks {
			switch b.typ {
			case typeToolResult:
				used = true
			case typeToolUse:
				used = true
				ms, err := rawjson.ObjectMembers(b.raw)
				if err != nil {
					return nil, fmt.Errorf("anthropic: stored tool_use: %w", err)
				}
				name, _ := rawjson.String(rawjson.Lookup(ms, "name"))
				if name != "" && !defined[name] {
					defined[name] = true
					extra = append(extra, provider.Tool{Name: name})
				}
			}
		}
	}
	if !used {
		return nil, nil
	}
	return append(tools[:len(tools):len(tools)], extra...), nil
}

// decodeSummary turns a summarization response into the compaction output.
func decodeSummary(ctx context.Context, blobs blob.Store, r response, budget int64) (provider.CompactOutput, error) {
	out := provider.CompactOutput{Usage: r.usage}
	var (
		run     bytes.Buffer
		texts   int
		calling bool
	)
	run.WriteByte('[')
	for _, b := range r.blocks {
		switch b.typ {
		case typeText:
			if texts > 0 {
				run.WriteByte(',')
			}
			run.Write(b.raw)
			texts++
		case typeToolUse, "server_tool_use", "mcp_tool_use":
			calling = true
		}
	}
	run.WriteByte(']')
	text, err := ProjectText(run.Bytes())
	if err != nil {
		return provider.CompactOutput{}, &DecodeError{API: "anthropic", Reason: "summary text", Err: err}
	}

	head := fmt.Sprintf("Anthropic Messages response %s to a compaction request stopped with stop_reason %q.", orUnknown(r.id), r.stopReason)
	var message, detail string
	switch {
	case r.stopReason == stopMaxTokens:
		message = fmt.Sprintf("the summary reached its output limit (%d tokens) before it was finished", budget)
		detail = "A cut-off summary would lose the end of the conversation, so it was discarded. Raise the compaction's targetTokens to allow a longer summary."
	case r.stopReason == stopRefusal:
		category, explanation := refusalDetails(r.stopDetails)
		message = "the model refused to summarize the conversation"
		if explanation != "" {
			message += ": " + explanation
		}
		if category != "" {
			detail = "Category: " + category + "\n"
		}
		if explanation != "" {
			detail += "Explanation: " + explanation + "\n"
		}
	case r.stopReason == stopContextWindow:
		message = "the conversation to compact does not fit the model's context window"
		detail = "Trim the session's context, or compact with a model that has a larger context window."
	case calling || r.stopReason == "tool_use":
		message = "the model called a tool instead of writing the summary"
	case r.stopReason != "end_turn" && r.stopReason != "":
		message = fmt.Sprintf("the summary stopped with stop_reason %q before it was finished", r.stopReason)
	case strings.TrimSpace(text) == "":
		message = "the model returned an empty summary"
	}
	if message != "" {
		full := head + "\nThe compaction failed: " + message + ". The original entries are kept.\n"
		if detail != "" {
			full += strings.TrimSuffix(detail, "\n") + "\n"
		}
		ref, err := blob.PutRef(ctx, blobs, []byte(full), content.MediaText, "")
		if err != nil {
			return provider.CompactOutput{}, fmt.Errorf("anthropic: store failure text: %w", err)
		}
		out.Failure = &core.Failure{Kind: provider.FailureCompaction, Message: bound(message), Ref: &ref}
		return out, nil
	}

	entry, err := provider.SummaryEntry(ctx, blobs, text, run.Bytes(), ProviderKindText)
	if err != nil {
		return provider.CompactOutput{}, fmt.Errorf("anthropic: %w", err)
	}
	out.Entries = []core.EntryInput{entry}
	return out, nil
}
