package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-agents/cairn/runtime"
)

// retryBudgetFlag registers --provider-retry-budget: how long a model call
// keeps retrying a provider's retryable errors (overloaded, rate limited,
// down) before its run fails and waits for session/runs/retry.
func retryBudgetFlag(cmd *cobra.Command, dst *time.Duration, where string) {
	cmd.Flags().DurationVar(dst, "provider-retry-budget", runtime.DefaultRetryBudget,
		"how long "+where+" retries a model call's retryable provider errors (backoff with jitter, Retry-After honoured) before the run fails (env CAIRN_PROVIDER_RETRY_BUDGET)")
}

// resolveRetryBudget applies CAIRN_PROVIDER_RETRY_BUDGET unless the flag was
// given, and validates the budget.
func resolveRetryBudget(cmd *cobra.Command, d time.Duration) (time.Duration, error) {
	if s := os.Getenv("CAIRN_PROVIDER_RETRY_BUDGET"); s != "" && !cmd.Flags().Changed("provider-retry-budget") {
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("CAIRN_PROVIDER_RETRY_BUDGET: %w", err)
		}
		d = v
	}
	if d <= 0 {
		return 0, fmt.Errorf("--provider-retry-budget %s: give a positive duration", d)
	}
	return d, nil
}
