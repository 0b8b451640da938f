package runtime

import (
	"testing"
)

// A hub keeps the pieces of the attempt in flight for late watchers: a new
// attempt (a retry) starts them again, its end forgets them, and the marks
// themselves never reach a watcher.
func TestDeltaHubKeepsTheAttemptInFlight(t *testing.T) {
	h := NewDeltaHub()
	piece := func(text string) GenerationDelta {
		return GenerationDelta{RunID: "r", Turn: 1, Kind: "text", Text: text}
	}
	mark := func(kind string) GenerationDelta { return GenerationDelta{RunID: "r", Turn: 1, Kind: kind} }
	h.Publish("s", mark(DeltaBegin))
	h.Publish("s", piece("dead "))
	h.Publish("s", mark(DeltaBegin)) // the first attempt died; the retry starts over
	h.Publish("s", piece("Hel"))
	past, ch, stop := h.Watch("s")
	defer stop()
	h.Publish("s", piece("lo"))
	h.Publish("s", mark(DeltaEnd))
	if len(past) != 1 || past[0].Text != "Hel" {
		t.Fatalf("past %v", past)
	}
	if got := <-ch; got.Text != "lo" {
		t.Fatalf("next %v", got)
	}
	select {
	case d := <-ch:
		t.Fatalf("a mark reached the watcher: %v", d)
	default:
	}
	if again, _, stop2 := h.Watch("s"); len(again) != 0 {
		t.Fatalf("pieces kept after the end: %v", again)
	} else {
		stop2()
	}
}
