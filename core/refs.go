package core

import (
	"encoding/json"
	"fmt"

	"github.com/cairn-agents/cairn/content"
)

// payloadOf returns a new value of the payload type of an event kind, for
// decoding; nil for a kind this version does not know.
func payloadOf(kind string) any {
	switch kind {
	case KindSessionOpened:
		return new(SessionOpened)
	case KindSessionConfigChanged:
		return new(SessionConfigChanged)
	case KindSessionConfigChangeRequested:
		return new(SessionConfigChangeRequested)
	case KindSessionClosed:
		return new(SessionClosed)
	case KindRunAccepted:
		return new(RunAccepted)
	case KindRunStarted:
		return new(RunStarted)
	case KindRunSteeringAccepted:
		return new(RunSteeringAccepted)
	case KindRunCancelRequested:
		return new(RunCancelRequested)
	case KindRunCompleted:
		return new(RunCompleted)
	case KindRunFailed:
		return new(RunFailed)
	case KindRunCancelled:
		return new(RunCancelled)
	case KindRunTranscriptionRequested:
		return new(RunTranscriptionRequested)
	case KindRunTranscriptionCompleted:
		return new(RunTranscriptionCompleted)
	case KindTurnStarted:
		return new(TurnStarted)
	case KindTurnPlanned:
		return new(TurnPlanned)
	case KindTurnGenerationRequested:
		return new(TurnGenerationRequested)
	case KindTurnGenerationCompleted:
		return new(TurnGenerationCompleted)
	case KindTurnCompleted:
		return new(TurnCompleted)
	case KindToolBatchStarted:
		return new(ToolBatchStarted)
	case KindToolCallStarted:
		return new(ToolCallStarted)
	case KindToolCallCompleted:
		return new(ToolCallCompleted)
	case KindToolBatchCompleted:
		return new(ToolBatchCompleted)
	case KindToolCallAwaiting:
		return new(ToolCallAwaiting)
	case KindToolApprovalRequested:
		return new(ToolApprovalRequested)
	case KindToolApprovalDecided:
		return new(ToolApprovalDecided)
	case KindSessionWarning:
		return new(SessionWarning)
	case KindContextEntriesApplied:
		return new(ContextEntriesApplied)
	case KindContextEntriesRemoved:
		return new(ContextEntriesRemoved)
	case KindContextKeysRemoved:
		return new(ContextKeysRemoved)
	case KindContextCompacted:
		return new(ContextCompacted)
	case KindCompactionRequested:
		return new(CompactionRequested)
	case KindCompactionCompleted:
		return new(CompactionCompleted)
	case KindCompactionFailed:
		return new(CompactionFailed)
	}
	return nil
}

// EventRefs returns the blobs a stored event refers to: the typed ref fields
// of its payload, exactly what its proposal declared when it was appended.
func EventRefs(ev Event) ([]content.Digest, error) {
	p := payloadOf(ev.Kind)
	if p == nil || ev.Version != EventVersion {
		return nil, fmt.Errorf("event %d: unknown kind %q version %d", ev.Seq, ev.Kind, ev.Version)
	}
	if err := json.Unmarshal(ev.Payload, p); err != nil {
		return nil, fmt.Errorf("event %d (%s): %w", ev.Seq, ev.Kind, err)
	}
	return content.RefsOf(p), nil
}

// HeldRefs declares the snapshot a link pins, a digest held as a string.
func (l Link) HeldRefs() []content.Digest {
	if d, err := content.ParseDigest(l.Snapshot); err == nil {
		return []content.Digest{d}
	}
	return nil
}
