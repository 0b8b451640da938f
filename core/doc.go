// Package core is Cairn's pure session state machine: admission, the
// reducer, the planner, active context, the compaction state machine,
// catalogs and token-estimate sums. A host (runtime/local in one process,
// runtime/temporal as a workflow) drives it; the core never does I/O.
//
// # What the core owns, and what it does not
//
// The core decides. Given the committed state of a session and a command,
// Admit says whether the command is accepted and which events it proposes;
// given the state alone, the planner says what should happen next. The
// State is a fold of the session's committed events (State.Apply), so the
// same events always give the same state.
//
// The core never reads a clock, draws randomness, touches a store or a
// network, or lets Go's map order reach its output. Time comes in as the
// AtMs of a command and the atMs of Drive.Next; ids come in as fields of
// commands; bytes stay in the content store and reach the core as
// ContentRefs with facts extracted from them. That is what lets the same
// code run in a goroutine and inside a Temporal workflow that is replayed
// on another machine, and what makes a checkpoint plus the events after it
// equal to a full replay.
//
// The host owns everything else: the session log and its seqs, the content
// store, the clock, ids, running model calls, tools, compactors and
// transcription, retries, concurrency, checkpoints and memory.
//
// # The loop
//
// Drive is the contract, after etcd's raft Node and its Ready loop. A host
// loads the state (a checkpoint and the events after it, or the whole log),
// wraps it in NewDrive and then repeats:
//
//	for {
//		in := d.Next(now)
//		switch in.Kind {
//		case IntentAppend:
//			events, err := log.Append(in.ExpectedHead, in.Proposals)
//			if err != nil {
//				d.Abandon() // on a head conflict: reload from the log
//				break
//			}
//			d.Committed(events)
//		case IntentGenerate, IntentInvokeTools, IntentCompact, IntentTranscribe:
//			dispatch the work once; its result comes back later as a command
//		case IntentIdle, IntentClosed:
//			wait for a command
//		}
//	}
//
// and admits each command (a client's, or a finished piece of work's
// result) with Drive.Admit, which turns the accepted proposals into the
// next IntentAppend. Both of Cairn's hosts run this loop through one copy
// of it, runtime.Pump, runtime.Flush and runtime.AdmitAndAppend, and keep
// only their own I/O and scheduling.
//
// A host may append an IntentAppend together with the steps the core then
// takes on its own (Drive.Chain: a run accepted and its first turn opened,
// an answer admitted and its run completed) in one transaction. The drive
// applies them to plan each next step, so if that append fails the host
// rebuilds the drive from the log. Both hosts do; a Temporal workflow
// started before chaining replays one step per append.
//
// # What a host must do with each intent
//
//   - IntentAppend: append Proposals to the log after ExpectedHead, in one
//     transaction, then hand the events the store committed (with their
//     seqs) to Drive.Committed. If the append fails, call Drive.Abandon:
//     nothing changed. If it failed because the head moved (another writer,
//     or an append a crashed worker made before it died), rebuild the state
//     from the log and decide again; the proposals were made against a
//     state that is gone.
//   - IntentGenerate: build the model request from Generate's frozen
//     context (its entries, at ContextRevision, whose Fingerprint the
//     request must match), call the provider and admit a GenerationResult.
//   - IntentInvokeTools: run every call in Tools, concurrently if it likes,
//     and admit one ToolResult per call, in any order.
//   - IntentCompact: run the compactor over Compact's entries and admit a
//     CompactionResult. While it is pending the core rejects runs and
//     context edits (RejectCompactionPending); a host may hold them until
//     it ends instead, in arrival order. Steering, cancellation and
//     results are never held.
//   - IntentTranscribe: transcribe the audio of Transcribe's run before its
//     first turn and admit a TranscriptionResult.
//   - IntentIdle: nothing to do until a command arrives.
//   - IntentClosed: the session is closed; the host may let it go once its
//     work in flight has ended.
//
// # Rules
//
// Append before anything else. State changes only through Drive.Committed,
// with events the log has stored: the drive never applies its own
// proposals. A host answers a client only after the command's events are
// committed, and dispatches work only when Next asks for it, which it does
// only once the step that asked for the work (a turn started, a call
// started, a compaction requested) is in the log. So a crash at any point
// leaves a log from which the same work is planned again, and nothing the
// client was told is lost.
//
// One step at a time. While proposals wait to be appended, Admit refuses
// with ErrPendingAppend. A host first flushes the appends the core proposes
// on its own (a queued run starting, a turn opening, a run finishing, an
// automatic compaction), so each command is admitted against the latest
// state.
//
// Work is at most once in flight, and a result is admitted, not its work
// rerun. Next repeats a work intent until its result commits; the host
// keys work by Work.Key and dispatches each key once. After every commit it
// cancels the work the state no longer awaits (State.Awaits: a cancelled
// run, a finished compaction); a result that arrives anyway is rejected as
// RejectStaleResult and dropped. A result the log cannot take is admitted
// again later, never run again, and after a bounded number of attempts
// (or at once, if the core refuses it) the host admits a failure in its
// place (runtime.Unadmitted), so the run ends instead of hanging.
//
// Failures are results. Work that fails after the host's retries is still
// answered: a GenerationResult or TranscriptionResult with a Failure, a
// ToolResult with status CallFailed and the constant ToolFailedRef, a
// CompactionResult with a Failure (the original entries stay). The
// constant blobs those refs name (ConstantBlobs) must be in the content
// store before the first append that could use them.
//
// Results carry the time they are admitted. A host stamps each result's
// AtMs when it admits it, not when the work started, so the log's times
// read in order.
//
// Checkpoints are optional and never authoritative. EncodeCheckpoint of the
// committed state at a head, decoded and fed the events after that head,
// equals the state replayed from the whole log; a host may write one at any
// committed head and must fall back to a full replay when one is missing or
// unusable.
package core
