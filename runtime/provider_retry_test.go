package runtime_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
)

// Waits are jittered below a ceiling that doubles up to MaxDelay, never
// past the budget; Retry-After is obeyed as given; a spent budget (or a
// Retry-After past it) ends the retries.
func TestProviderRetryWaits(t *testing.T) {
	p := runtime.ProviderRetry{Budget: time.Minute, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for n, ceiling := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 40: time.Second} {
		distinct := map[time.Duration]bool{}
		for range 200 {
			w, ok := p.Wait(n, 0, 0)
			if !ok || w < 0 || w > ceiling {
				t.Fatalf("attempt %d waits %s (ok %v), want 0…%s", n, w, ok, ceiling)
			}
			distinct[w] = true
		}
		if len(distinct) < 50 {
			t.Fatalf("attempt %d: %d distinct waits in 200: not jittered", n, len(distinct))
		}
	}
	if w, ok := p.Wait(1, 0, 5*time.Second); !ok || w != 5*time.Second {
		t.Fatalf("Retry-After 5s: wait %s ok %v", w, ok)
	}
	if _, ok := p.Wait(1, 50*time.Second, 20*time.Second); ok {
		t.Fatal("a Retry-After past the budget was waited for")
	}
	if _, ok := p.Wait(3, time.Minute, 0); ok {
		t.Fatal("retried with the budget spent")
	}
	if w, ok := p.Wait(9, time.Minute-10*time.Millisecond, 0); !ok || w > 10*time.Millisecond {
		t.Fatalf("the last wait %s (ok %v) passes the budget's end", w, ok)
	}
	if w, ok := (runtime.ProviderRetry{}).Wait(1, 9*time.Minute, 0); !ok || w > 500*time.Millisecond {
		t.Fatalf("the defaults (10m budget, 500ms base): wait %s ok %v", w, ok)
	}
}

func TestGaveUpSaysTheBudgetWasSpent(t *testing.T) {
	pe := &provider.Error{Status: 503, Retryable: true, Message: "overloaded"}
	got := runtime.GaveUp(pe, 7, 90*time.Second)
	if got.Retryable || !got.Exhausted || !pe.Retryable {
		t.Fatalf("GaveUp %+v (original %+v)", got, pe)
	}
	msg := got.Error()
	for _, want := range []string{"retries exhausted, HTTP 503", "overloaded", "7 attempts over 1m30s", "session/runs/retry"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}
