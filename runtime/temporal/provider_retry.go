package temporal

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
)

// retryProvider decides what an activity does with a retryable provider
// error, by the worker's runtime.ProviderRetry: fail this attempt so
// Temporal runs the next after the policy's wait (retry), or, once the
// budget from the first attempt is spent, give up (final), and the activity
// completes with a failed result as for a terminal error.
func (a *Activities) retryProvider(ctx context.Context, pe *provider.Error, message string) (retry error, final *provider.Error) {
	info := activity.GetInfo(ctx)
	// ScheduledTime is when the first attempt was scheduled.
	elapsed := time.Since(info.ScheduledTime)
	wait, ok := a.Retry.Wait(int(info.Attempt), elapsed, pe.RetryAfter)
	if !ok {
		return nil, runtime.GaveUp(pe, int(info.Attempt), elapsed)
	}
	// A zero delay would mean "the policy's own backoff".
	return temporal.NewApplicationErrorWithOptions(message, errRetryableProvider,
		temporal.ApplicationErrorOptions{NextRetryDelay: max(wait, time.Millisecond)}), nil
}
