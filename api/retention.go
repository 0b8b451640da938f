package api

import (
	"context"
	"time"

	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store"
)

// MethodRetentionCollect runs one blob-collector pass: an admin method,
// served in the embedded mode (its one universe); a hosted server refuses it
// (run `cairn gc` with the operator's store flags instead).
const MethodRetentionCollect = "retention/collect"

// RetentionCollectParams are the parameters of retention/collect.
type RetentionCollectParams struct {
	// GraceMs keeps blobs put or admitted less than this long ago.
	GraceMs int64 `json:"graceMs"`
	// DryRun counts without deleting.
	DryRun bool `json:"dryRun,omitempty"`
}

// RetentionCollectResult is the pass's statistics.
type RetentionCollectResult = retention.Stats

func retentionRoutes() map[string]method {
	return map[string]method{MethodRetentionCollect: handler(call.collectRetention).errs(KindUnsupported)}
}

func (c call) collectRetention(ctx context.Context, p RetentionCollectParams) (RetentionCollectResult, error) {
	if p.GraceMs < 0 {
		return RetentionCollectResult{}, invalidParams("graceMs must not be negative")
	}
	if _, single := c.hosts.(SingleHost); !single {
		return RetentionCollectResult{}, newError(CodeDomain, KindUnsupported,
			"retention/collect is an admin method of the embedded mode; on a hosted server run `cairn gc`")
	}
	cs, ok := c.host.Log().(store.Collectable)
	if !ok {
		return RetentionCollectResult{}, newError(CodeDomain, KindUnsupported, "this server's store has no blob collector")
	}
	col := &retention.Collector{Universes: retention.Single("default", cs), Logger: c.log}
	return col.Collect(ctx, retention.Options{Grace: time.Duration(p.GraceMs) * time.Millisecond, DryRun: p.DryRun})
}

// CollectRetention calls retention/collect.
func (c *Client) CollectRetention(ctx context.Context, p RetentionCollectParams) (RetentionCollectResult, error) {
	var out RetentionCollectResult
	return out, c.Call(ctx, MethodRetentionCollect, p, &out)
}
