package e2e

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A provider outage that outlasts the retry budget fails the run with a
// message that says so and how to go on; `cairn run retry` then goes on
// from where it stopped: the next request carries the failed run's message
// once, and the new run completes.
func TestE2E_AnOutageOutlastingTheRetryBudgetCanBeRetried(t *testing.T) {
	fake := newFakeChat(t, fakeKey)
	down := true
	fake.respondWith(func(n int, body []byte) fakeStep {
		fake.mu.Lock()
		isDown := down
		fake.mu.Unlock()
		if isDown {
			return fakeStep{status: 503, body: `{"error":{"message":"The server is overloaded","type":"server_error"}}`}
		}
		return fakeStep{body: textResponse("chatcmpl-ok", "Back up.")}
	})
	dir := t.TempDir()
	cfg := writeProviderConfig(t, dir, fake)
	srv := startServeWith(t, []string{"--data", dir + "/data", "--config", cfg, "--provider-retry-budget", "1500ms"}, "FAKE_CHAT_KEY="+fakeKey)
	addr := []string{"--addr", srv.addr}

	start := time.Now()
	out, err := runCairn(t, nil, append([]string{"chat", "--provider", "fake", "--model", "m", "count the moons"}, addr...)...)
	if err == nil || !strings.Contains(err.Error(), "failed; go on from where it stopped with: cairn run retry") {
		t.Fatalf("chat during the outage: %v\n%s", err, out)
	}
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Fatalf("the run failed after %s, within its retry budget", took)
	}
	attempts := len(fake.bodies())
	if attempts < 3 {
		t.Fatalf("%d provider attempts in the budget: the errors were not retried", attempts)
	}
	session := strings.Fields(out)[1] // "session ID (continue it …)"
	events, err := runCairn(t, nil, append([]string{"events", session}, addr...)...)
	if err != nil || !strings.Contains(events, "retries exhausted") || !strings.Contains(events, "session/runs/retry") {
		t.Fatalf("the run's failure does not say the budget was spent: %v\n%s", err, events)
	}

	fake.mu.Lock()
	down = false
	fake.mu.Unlock()
	out, err = runCairn(t, nil, append([]string{"run", "retry", session}, addr...)...)
	if err != nil || !strings.Contains(out, "Back up.") || !strings.Contains(out, "(retries run_") {
		t.Fatalf("run retry: %v\n%s", err, out)
	}
	bodies := fake.bodies()
	if last := bodies[len(bodies)-1]; bytes.Count(last, []byte("count the moons")) != 1 {
		t.Fatalf("the retried request carries the failed run's message %d times:\n%s", bytes.Count(last, []byte("count the moons")), last)
	}
	// The run that retried is the last: retrying it again is refused.
	if out, err := runCairn(t, nil, append([]string{"run", "retry", session}, addr...)...); err == nil || !strings.Contains(err.Error(), "only a failed run can be retried") {
		t.Fatalf("retrying a completed run: %v\n%s", err, out)
	}
}
