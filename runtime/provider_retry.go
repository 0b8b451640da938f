package runtime

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cairn-agents/cairn/provider"
)

// DefaultRetryBudget is how long a generation (or compaction, or
// transcription) keeps retrying a provider's retryable errors before its
// run fails: long enough to ride out an outage of minutes.
const DefaultRetryBudget = 10 * time.Minute

// ProviderRetry is the retry policy of retryable provider errors, shared by
// both hosts: exponential backoff with full jitter (so sessions that failed
// together do not retry together), the provider's Retry-After honoured, and
// a budget of time from the first attempt, not a count of attempts.
type ProviderRetry struct {
	Budget    time.Duration // 0: DefaultRetryBudget
	BaseDelay time.Duration // 0: 500ms; the ceiling of the first wait, doubled per attempt
	MaxDelay  time.Duration // 0: 30s; the largest ceiling
}

func (p ProviderRetry) effective() ProviderRetry {
	if p.Budget <= 0 {
		p.Budget = DefaultRetryBudget
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	return p
}

// Wait says how long to wait after failed attempt n (from 1), elapsed since
// the first attempt began, before the next; ok is false when the budget
// leaves no room for another attempt. Retry-After is obeyed as given, even
// above MaxDelay; one past the budget ends the retries.
func (p ProviderRetry) Wait(n int, elapsed, retryAfter time.Duration) (wait time.Duration, ok bool) {
	p = p.effective()
	left := p.Budget - elapsed
	if left <= 0 {
		return 0, false
	}
	if retryAfter > 0 {
		return retryAfter, retryAfter < left
	}
	ceiling := min(p.BaseDelay<<min(n-1, 20), p.MaxDelay)
	wait = time.Duration(rand.Int64N(int64(ceiling) + 1))
	return min(wait, left), true
}

// GaveUp marks a retryable provider error as final: the budget is spent. Its
// message then says so, for the run's failure, instead of "retryable".
func GaveUp(err *provider.Error, attempts int, elapsed time.Duration) *provider.Error {
	out := *err
	out.Retryable, out.Exhausted = false, true
	out.Message = fmt.Sprintf("%s (still failing after %d attempts over %s; retry the run with session/runs/retry)", err.Message, attempts, elapsed.Round(time.Second))
	return &out
}
