package responses

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// This file holds both compaction routes of the Responses API; the package
// comment (doc.go, "Compaction") describes the wire format and lists the
// assumptions made where the API reference is silent. Every such choice is
// made here, in contextManagement, LowerCompact and DecodeCompact.

// contextManagement returns the `context_management` value a generation
// request carries for the session's compaction policy, or nil when it carries
// none (no policy, or a mode other than provider_triggered).
//
// The value is one compaction entry: [{"type":"compaction",
// "compact_threshold":N}] with N = ThresholdTokens. The threshold is optional
// in the API's request schema, so a policy without one (ThresholdTokens 0)
// sends [{"type":"compaction"}] and leaves the threshold to the provider.
// The bytes depend on the policy alone, so they are the same on every turn.
func contextManagement(c *core.Compaction) []byte {
	if c == nil || c.Mode != core.CompactionProviderTriggered {
		return nil
	}
	if c.ThresholdTokens <= 0 {
		return []byte(`[{"type":"` + itemCompaction + `"}]`)
	}
	return []byte(`[{"type":"` + itemCompaction + `","compact_threshold":` + strconv.FormatInt(c.ThresholdTokens, 10) + `}]`)
}

// Compact runs one standalone compaction: it lowers req.Entries, POSTs them to
// {BaseURL}/responses/compact and returns the items of the answer as the
// replacement entries, in answer order (see DecodeCompact).
//
// Endpoint resolution, authentication and error classification are those of
// Generate: HTTP and transport failures are *provider.Error, an undecodable
// 2xx body is a terminal *provider.Error, a cancelled ctx is ctx.Err(), and
// entries that cannot be lowered are *UnsupportedEntryError before any I/O.
// An answer that is a compaction object but holds no usable replacement is
// not an error: it returns CompactOutput.Failure (kind provider.FailureCompaction)
// and a nil error, and the core keeps the original entries.
func (a *Adapter) Compact(ctx context.Context, blobs blob.Store, req provider.CompactRequest) (provider.CompactOutput, error) {
	if req.Model.APIKind != "" && req.Model.APIKind != APIKind {
		return provider.CompactOutput{}, fmt.Errorf("responses: model selection has API kind %q, want %q", req.Model.APIKind, APIKind)
	}
	body, err := LowerCompact(ctx, blobs, req)
	if err != nil {
		return provider.CompactOutput{}, err
	}
	ep, err := endpoint.ResolveFor(a.resolver, req.Model.ProviderID, APIKind)
	if err != nil {
		return provider.CompactOutput{}, fmt.Errorf("responses: %w", err)
	}
	resp, err := a.post(ctx, ep, compactPath, net.Buffers{body}, nil)
	if err != nil {
		return provider.CompactOutput{}, err
	}
	out, err := DecodeCompact(ctx, blobs, resp)
	if err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			return provider.CompactOutput{}, &provider.Error{Status: http.StatusOK, Message: httpx.Redact(de.Error(), ep)}
		}
		return provider.CompactOutput{}, err // storing failed: not the provider's fault
	}
	return out, nil
}

// LowerCompact builds the body of a POST /responses/compact for req:
//
//	{"model", "instructions"?, "input"}
//
// `input` holds the compactable entries lowered exactly as Lower lowers them
// for a generation (stored native items byte for byte, tool results as
// function_call_output, text entries as messages), so an item is sent to the
// compact endpoint with the bytes it has in the session's generation
// requests. `instructions` appears only if req.Entries holds instruction
// entries, which the core does not send.
//
// Nothing else is sent: the endpoint's request schema has no tools, store,
// include, reasoning or sampling members, and this adapter does not pass the
// session's parameters on (not even `extra`, which was written for
// generation requests). req.Tools and req.TargetTokens are not used. There
// is no prompt_cache_key, for the reason given at LowerOptions.Compaction.
// The result is a pure function of the entries' bytes and the model.
func LowerCompact(ctx context.Context, blobs blob.Store, req provider.CompactRequest) ([]byte, error) {
	if req.Model.Model == "" {
		return nil, fmt.Errorf("responses: compaction request has no model")
	}
	instructions, items, err := lowerEntries(ctx, blobs, req.Entries)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("responses: compaction request has no entries to compact")
	}
	var buf bytes.Buffer
	buf.WriteString(`{"model":`)
	rawjson.WriteString(&buf, req.Model.Model)
	if instructions != nil {
		buf.WriteString(`,"instructions":`)
		buf.Write(instructions)
	}
	buf.WriteString(`,"input":[`)
	buf.Write(bytes.Join(items, []byte(",")))
	buf.WriteString(`]}`)
	return buf.Bytes(), nil
}

// DecodeCompact stores every output item of a compact endpoint answer in
// blobs and returns them as replacement entries, in answer order: the
// `compaction` item as kind compaction, the user messages the endpoint
// keeps as kind message (role user), and any other item as Decode would
// describe it. Usage is mapped as Decode maps it.
//
// The answer is a usable replacement only if it holds at least one
// compaction item and no function_call item (a call in a replacement would
// have no output, which the API rejects on every later request). Otherwise
// CompactOutput.Failure is set, Entries is empty and the error is nil: the
// provider answered, just not with a replacement. A body that is not a
// compaction object at all (no output array) is a *DecodeError.
func DecodeCompact(ctx context.Context, blobs blob.Store, body []byte) (provider.CompactOutput, error) {
	env, items, err := splitBody(body)
	if err != nil {
		return provider.CompactOutput{}, err
	}
	out := provider.CompactOutput{Usage: env.usage()}
	var entries []core.EntryInput
	compactions, calls := 0, 0
	for i, raw := range items {
		e, call, err := decodeItem(ctx, blobs, raw)
		if err != nil {
			var se *storeError
			if errors.As(err, &se) {
				return provider.CompactOutput{}, err
			}
			return provider.CompactOutput{}, &DecodeError{API: "responses", Reason: fmt.Sprintf("output[%d]", i), Err: err}
		}
		switch {
		case e.Kind == core.EntryCompaction:
			compactions++
		case call != nil:
			calls++
		}
		entries = append(entries, e)
	}
	switch {
	case compactions == 0:
		out.Failure = &core.Failure{Kind: provider.FailureCompaction,
			Message: fmt.Sprintf("the compact endpoint answered without a compaction item (%d output items)", len(items))}
	case calls > 0:
		out.Failure = &core.Failure{Kind: provider.FailureCompaction,
			Message: fmt.Sprintf("the compact endpoint answered with %d function_call items, which a replacement cannot carry", calls)}
	default:
		out.Entries = entries
	}
	return out, nil
}

// compactionPreview describes a compaction item for display; its content is
// opaque, so only its size is told.
func compactionPreview(ms []rawjson.Member) string {
	enc, _ := rawjson.String(rawjson.Lookup(ms, "encrypted_content"))
	return fmt.Sprintf("compaction (%d bytes of encrypted context)", len(enc))
}
