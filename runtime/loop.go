package runtime

import "github.com/cairn-agents/cairn/core"

// Host is what the loop needs of a host for one session: its drive, its
// clock, how it appends, and how it starts each kind of work. The loop
// decides the order (core/doc.go states the rules); the host decides how
// and where things run. Work started here runs in the background and comes
// back as a result command the host admits with AdmitAndAppend.
type Host interface {
	// Drive is the session's drive. A head conflict in Append may
	// replace it, so the loop asks again at every step.
	Drive() *core.Drive
	// NowMs is the host's clock, in milliseconds.
	NowMs() int64
	// Append appends an append intent's proposals and feeds the
	// committed events to the drive, or abandons them and returns why.
	Append(in core.Intent) error
	// Generate, InvokeTool, Compact and Transcribe start one piece of
	// work, unless it is already in flight.
	Generate(w core.GenerateWork)
	InvokeTool(runID string, turn int, call core.ToolCall)
	Compact(w core.CompactWork)
	Transcribe(w core.TranscribeWork)
}

// ChainSteps bounds how many of the core's steps a host appends in one
// go (core.Drive.Chain): a turn takes at most a few, so the bound only
// keeps a bug from looping.
const ChainSteps = 16

// Pump appends every step the core takes on its own and starts the work it
// asks for, until the session waits for a result or a command. It returns
// the error of an append that failed; when to pump again is the host's
// call.
func Pump(h Host) error {
	for {
		in := h.Drive().Next(h.NowMs())
		switch in.Kind {
		case core.IntentAppend:
			if err := h.Append(in); err != nil {
				return err
			}
		case core.IntentGenerate:
			h.Generate(*in.Generate)
			return nil
		case core.IntentInvokeTools:
			for _, c := range in.Tools.Calls {
				h.InvokeTool(in.Tools.RunID, in.Tools.Turn, c)
			}
			return nil
		case core.IntentCompact:
			h.Compact(*in.Compact)
			return nil
		case core.IntentTranscribe:
			h.Transcribe(*in.Transcribe)
			return nil
		default:
			return nil
		}
	}
}

// Flush appends the steps the core proposed on its own (a queued run
// starting, a turn opening, a run ending, an automatic compaction), so a
// command is admitted against the latest state. It stops at an append that
// fails: the drive has abandoned it, and the next command meets the same
// proposal again or a state rebuilt from the log.
func Flush(h Host) {
	for {
		in := h.Drive().Next(h.NowMs())
		if in.Kind != core.IntentAppend || h.Append(in) != nil {
			return
		}
	}
}

// AdmitAndAppend admits a command against the latest state and appends its
// proposals before it returns, so whoever sent it is answered only once it
// is in the log. If the append fails, nothing changed.
func AdmitAndAppend(h Host, cmd core.Command) (core.Admission, error) {
	Flush(h)
	adm, err := h.Drive().Admit(cmd)
	if err != nil || len(adm.Proposals) == 0 {
		return adm, err
	}
	if err := h.Append(h.Drive().Next(h.NowMs())); err != nil {
		return core.Admission{}, err
	}
	return adm, nil
}
