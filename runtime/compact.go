package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
)

// Compact runs the session's compactor on a pending standalone compaction.
// A nil error returns the result to admit (a Failure inside it keeps the
// original entries); a retryable *provider.Error may be retried by the host;
// any other error should become FailedCompaction.
func (x *Executor) Compact(ctx context.Context, sessionID string, w core.CompactWork) (core.CompactionResult, error) {
	res := core.CompactionResult{CompactionID: w.CompactionID, ContextRevision: w.ContextRevision}
	adapter, ok := x.Adapters[w.Config.Model.APIKind]
	if !ok {
		return res, fmt.Errorf("no adapter for API kind %q", w.Config.Model.APIKind)
	}
	compactor, ok := adapter.(provider.Compactor)
	if !ok {
		res.Failure = &core.Failure{Kind: "compaction_unsupported", Message: "the " + w.Config.Model.APIKind + " adapter cannot compact"}
		return res, nil
	}
	var target int64
	if c := w.Config.Compaction; c != nil {
		target = c.TargetTokens
	}
	tools, err := x.toolDefinitions(ctx, w.Config)
	if err != nil {
		return res, err
	}
	began := time.Now()
	out, err := compactor.Compact(ctx, x.Blobs, provider.CompactRequest{
		SessionID: sessionID, Model: w.Config.Model, Entries: w.Entries,
		Tools: tools, Params: w.Config.ProviderParams, TargetTokens: target,
	})
	if x.Observer != nil {
		x.Observer.ProviderCall(ProviderCallInfo{SessionID: sessionID, CompactionID: w.CompactionID, APIKind: w.Config.Model.APIKind,
			ProviderID: w.Config.Model.ProviderID, Start: began, Duration: time.Since(began), Failed: err != nil})
	}
	if err != nil {
		return res, err
	}
	res.Entries, res.Usage, res.Failure = out.Entries, out.Usage, out.Failure
	return res, nil
}

// FailedCompaction is the result of a compaction the host will not retry:
// the compaction fails and every original entry stays.
func FailedCompaction(w core.CompactWork, err error) core.CompactionResult {
	f := core.Failure{Kind: core.FailureCompaction, Message: "the compaction call failed at the runtime boundary"}
	var pe *provider.Error
	switch {
	case errors.As(err, &pe):
		f.Message = pe.Error()
	case errors.Is(err, endpoint.ErrMissingKey), errors.Is(err, endpoint.ErrUnknownProvider), errors.Is(err, endpoint.ErrConfig):
		f.Message = err.Error()
	}
	return core.CompactionResult{CompactionID: w.CompactionID, ContextRevision: w.ContextRevision, Failure: &f}
}
