package core

import "github.com/cairn-agents/cairn/content"

// IntentKind says what the host should do next for a session.
type IntentKind int

const (
	// IntentIdle: nothing to do until a command arrives.
	IntentIdle IntentKind = iota
	// IntentAppend: persist Proposals after ExpectedHead, then feed the
	// committed events back with Drive.Committed.
	IntentAppend
	// IntentGenerate: run the model for Generate and submit a GenerationResult.
	IntentGenerate
	// IntentInvokeTools: run every call in Tools (concurrently) and submit a
	// ToolResult for each.
	IntentInvokeTools
	// IntentClosed: the session is closed.
	IntentClosed
	// IntentCompact: run the compactor for Compact and submit a
	// CompactionResult.
	IntentCompact
	// IntentTranscribe: transcribe the audio input of Transcribe's run and
	// submit a TranscriptionResult.
	IntentTranscribe
)

func (k IntentKind) String() string {
	return [...]string{"idle", "append", "generate", "invoke_tools", "closed", "compact", "transcribe"}[k]
}

// Intent is one piece of work the drive hands its host.
type Intent struct {
	Kind         IntentKind
	ExpectedHead int64
	Proposals    []Proposal
	Generate     *GenerateWork
	Tools        *ToolWork
	Compact      *CompactWork
	Transcribe   *TranscribeWork
}

// GenerateWork is a planned turn: the frozen context the request is built from.
type GenerateWork struct {
	RunID           string
	Turn            int
	ContextRevision int64
	Fingerprint     string
	Config          SessionConfig
	Entries         []Entry
	// LastSegments is State.LastSegments: the list this request's segment
	// list is stored as a delta on (nil: stored whole).
	LastSegments *content.ContentRef
}

// ToolWork is the unfinished calls of a turn's tool batch.
type ToolWork struct {
	RunID string
	Turn  int
	Calls []ToolCall
}
