package core

// RejectContextWindowExceeded refuses a run whose request could not fit the
// model's context window: its input alone, or the context with it when the
// session has no compaction policy to make room first.
const RejectContextWindowExceeded = "context_window_exceeded"

// TriggerContextWindow is the compaction a run's admission requested because
// the context and the run's input would not fit the model's window.
const TriggerContextWindow = "context_window"

// windowFit says how a run's input fits the model's context window
// (StartRun.ContextWindow; 0 means unknown, and anything fits). The sums are
// the recorded estimates; entries without one count nothing, so an
// estimate never refuses more than it knows of. compact is set when the
// context must be compacted before the run: the session is idle and its
// policy compacts standalone.
func windowFit(s *State, c StartRun) (compact bool, err error) {
	window := c.ContextWindow
	if window <= 0 {
		return false, nil
	}
	var input int64
	for _, it := range c.Input {
		input += max(it.TokenEstimate.Tokens, 0)
	}
	for _, a := range c.Activations {
		input += max(a.TokenEstimate.Tokens, 0)
	}
	if input > window {
		return false, reject(RejectContextWindowExceeded, "the run's input is about %d tokens, more than model %s's context window of %d tokens: send less, or a file through a workspace", input, s.Config.Model.Model, window)
	}
	var held int64
	for _, e := range s.Context() {
		held += max(e.TokenEstimate.Tokens, 0)
	}
	if held+input <= window {
		return false, nil
	}
	p := s.Config.Compaction
	canCompact := p != nil && p.Mode == CompactionProviderStandalone && len(s.Compactable()) > 0
	switch {
	case canCompact && !s.HasWork():
		return true, nil
	case canCompact:
		return false, nil // queued: the context will have moved on when it starts
	}
	return false, reject(RejectContextWindowExceeded, "the context (about %d tokens) and the run's input (about %d) exceed model %s's context window of %d tokens: compact the context (cairn context compact), remove entries, or give the session a compaction policy", held, input, s.Config.Model.Model, window)
}
