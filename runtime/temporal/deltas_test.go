package temporal

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/runtime"
)

type recordingBus struct {
	mu   sync.Mutex
	msgs []runtime.GenerationDelta
	hold chan struct{} // the first publish waits for it, so pieces queue meanwhile
}

func (b *recordingBus) PublishDelta(_ context.Context, _ string, msg []byte) error {
	b.mu.Lock()
	first := len(b.msgs) == 0
	var d runtime.GenerationDelta
	_ = json.Unmarshal(msg, &d)
	b.msgs = append(b.msgs, d)
	b.mu.Unlock()
	if first {
		<-b.hold
	}
	return nil
}

func (b *recordingBus) ListenDeltas(context.Context, func(), func(string, []byte)) error { return nil }

// Pieces that wait together go as one message, in order; marks go alone;
// a piece too long for one message is cut on character boundaries.
func TestDeltaSenderJoinsAndCuts(t *testing.T) {
	bus := &recordingBus{hold: make(chan struct{})}
	var s deltaSender
	send := s.sink(bus)
	piece := func(text string) runtime.GenerationDelta {
		return runtime.GenerationDelta{RunID: "r", Turn: 1, Kind: "text", Text: text}
	}
	send("s", runtime.GenerationDelta{RunID: "r", Turn: 1, Kind: runtime.DeltaBegin})
	send("s", piece("a"))
	send("s", piece("b"))
	send("s", runtime.GenerationDelta{RunID: "r", Turn: 1, Kind: "reasoning", Text: "c"})
	long := strings.Repeat("é", maxDeltaText) // two bytes each
	send("s", piece(long))
	send("s", runtime.GenerationDelta{RunID: "r", Turn: 1, Kind: runtime.DeltaEnd})
	close(bus.hold)
	deadline := time.Now().Add(5 * time.Second)
	for {
		bus.mu.Lock()
		n := len(bus.msgs)
		bus.mu.Unlock()
		if n >= 6 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	bus.mu.Lock()
	defer bus.mu.Unlock()
	var kinds []string
	var text strings.Builder
	for _, m := range bus.msgs {
		kinds = append(kinds, m.Kind)
		if m.Kind == "text" {
			text.WriteString(m.Text)
			if len(m.Text) > maxDeltaText || !json.Valid([]byte(`"`+m.Text+`"`)) {
				t.Fatalf("a message of %d bytes", len(m.Text))
			}
		}
	}
	if strings.Join(kinds, " ") != "begin text reasoning text text end" || text.String() != "ab"+long {
		t.Fatalf("messages %v, text %d bytes", kinds, text.Len())
	}
}
