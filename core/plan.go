package core

// plan decides the next step of a session from its committed state alone:
// either proposals the core makes on its own (start a queued run, open a
// turn, finish a run) or work for the host. The host calls it through Drive.
func plan(s *State, at int64, fps **FingerprintMemo) Intent {
	if s.Closed {
		return Intent{Kind: IntentClosed}
	}
	if !s.Opened {
		return Intent{Kind: IntentIdle}
	}
	if s.Compaction != nil {
		return Intent{Kind: IntentCompact, Compact: s.PendingCompactWork()}
	}
	r := s.ActiveRun()
	if r == nil {
		if in, ok := planPendingConfig(s, at); ok {
			return in
		}
		if len(s.Queue) > 0 {
			b := s.newBatch(at)
			b.add(KindRunStarted, runJoins(s.Queue[0]), RunStarted{RunID: s.Queue[0]})
			return appendIntent(s, b)
		}
		if in, ok := planAutoCompaction(s, at); ok {
			return in
		}
		return Intent{Kind: IntentIdle}
	}
	t := r.Turn
	if t == nil || t.Completed {
		return planBoundary(s, r, at, fps)
	}
	switch {
	case t.GenRequested && !t.GenCompleted:
		return Intent{Kind: IntentGenerate, Generate: &GenerateWork{
			RunID: r.ID, Turn: t.N, ContextRevision: t.ContextRevision, Fingerprint: t.Fingerprint,
			Config: s.Config, Entries: s.Context(), LastSegments: s.LastSegments,
		}}
	case t.BatchStarted && !t.BatchCompleted:
		work := &ToolWork{RunID: r.ID, Turn: t.N}
		for _, c := range t.Calls {
			if c.Started && !c.Completed && !c.Awaiting && c.Approval != ApprovalPending {
				work.Calls = append(work.Calls, c.ToolCall)
			}
		}
		if len(work.Calls) == 0 {
			return Intent{Kind: IntentIdle} // what is left waits for the client or for a decision
		}
		return Intent{Kind: IntentInvokeTools, Tools: work}
	}
	return Intent{Kind: IntentIdle}
}

// planBoundary runs at a turn boundary: it takes another turn when the run
// has unconsumed input or steering or tool results to answer, and otherwise
// completes the run with the last assistant message as its output.
func planBoundary(s *State, r *Run, at int64, fps **FingerprintMemo) Intent {
	if in, ok := planTranscription(s, r, at); ok {
		return in
	}
	b := s.newBatch(at)
	needTurn := !r.InputConsumed || len(r.Steering) > 0 || (r.Turn != nil && r.Turn.Outcome == TurnOutcomeToolCalls)
	if !needTurn {
		var out *RunCompleted = &RunCompleted{RunID: r.ID}
		if r.Turn != nil {
			out.Output = r.Turn.LastMessage
		}
		b.endRun(r.ID, KindRunCompleted, *out)
		return appendIntent(s, b)
	}
	if r.Turns >= s.MaxTurns() {
		b.endRun(r.ID, KindRunFailed, RunFailed{RunID: r.ID, Error: Failure{Kind: "turn_limit", Message: "the run reached its limit of " + itoaInt(s.MaxTurns()) + " turns"}})
		return appendIntent(s, b)
	}
	n := r.Turns + 1
	joins := turnJoins(r.ID, n)
	b.add(KindTurnStarted, joins, TurnStarted{RunID: r.ID, Turn: n})
	var inputs []EntryInput
	if !r.InputConsumed {
		inputs = append(inputs, runActivations(r.Activations)...)
		inputs = append(inputs, runInputs(r)...)
	}
	for _, st := range r.Steering {
		inputs = append(inputs, userMessages(st.Input)...)
	}
	added := b.entries(inputs, SourceUser, r.ID, joins)
	// The planned request is the context and then the added entries (user
	// messages carry no key: they go to the tail), fingerprinted in place.
	inOrder := s.inRequestOrder() // then the entries are handed over whole, as they are
	listed := len(added)
	if !inOrder {
		listed += s.EntryCount()
	}
	fp := (*fps).start(s.Config, listed)
	if inOrder {
		fp.run = s.entries
	} else {
		s.eachInContext(fp.add)
	}
	fp.remember = fp.count()
	for i := range added {
		fp.add(&added[i])
	}
	sum, memo := fp.sum()
	*fps = memo
	b.add(KindTurnPlanned, joins, TurnPlanned{RunID: r.ID, Turn: n, ContextRevision: b.rev, ConfigRevision: s.ConfigRevision, Fingerprint: sum})
	b.add(KindTurnGenerationRequested, joins, TurnGenerationRequested{RunID: r.ID, Turn: n})
	return appendIntent(s, b)
}

// runActivations are a run's skill activations as entries that expire with
// it: unkeyed, so they never replace a session-scoped activation.
func runActivations(items []EntryInput) []EntryInput {
	out := make([]EntryInput, len(items))
	for i, in := range items {
		in.Key, in.Scope = "", ScopeRun
		out[i] = in
	}
	return out
}

func userMessages(items []InputItem) []EntryInput {
	out := make([]EntryInput, len(items))
	for i, it := range items {
		out[i] = EntryInput{Kind: EntryMessage, Role: RoleUser, Content: it.Content, TokenEstimate: it.TokenEstimate, Preview: it.Preview, Origin: "user:"}
	}
	return out
}

func appendIntent(s *State, b *batch) Intent {
	return Intent{Kind: IntentAppend, ExpectedHead: s.Head, Proposals: b.props}
}

// planPendingConfig applies a config change requested while the session
// was busy, now that no run is active: before a queued run starts, so that
// run and every later one use it.
func planPendingConfig(s *State, at int64) (Intent, bool) {
	p := s.PendingConfig
	if p == nil {
		return Intent{}, false
	}
	b := s.newBatch(at)
	b.add(KindSessionConfigChanged, nil, SessionConfigChanged{Config: p.Config})
	if p.Instructions != nil {
		b.entries([]EntryInput{*p.Instructions}, SourceAPI, "", nil)
	}
	return appendIntent(s, b), true
}
