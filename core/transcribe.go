package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/content"
)

// Audio input. A run's input may name uploaded audio; before the turn that
// consumes it the core asks the host to transcribe it (IntentTranscribe),
// the host stores each transcript as a TranscriptRecord and answers with a
// TranscriptionResult, and the turn starts with one user message per
// transcript whose provenance is the original audio. Adapters render the
// record for the model with a label naming the file; display reads its text.

// Transcription selects the model that transcribes a session's audio input.
// Like the model selection it names a provider id only: the endpoint and its
// key are resolved just before the call.
type Transcription struct {
	ProviderID string `json:"providerId"`
	Model      string `json:"model"`
}

const (
	// InputAudio is the InputItem kind of audio input.
	InputAudio = "audio"
	// MediaTranscript and ProviderKindTranscript describe a stored
	// TranscriptRecord.
	MediaTranscript        = "application/vnd.cairn.transcript+json"
	ProviderKindTranscript = "cairn.transcript"
	// FailureTranscription is the failure kind of a run whose audio could
	// not be transcribed.
	FailureTranscription = "transcription_failed"
	// RejectTranscriptionNotConfigured refuses audio input in a session
	// without a transcription configuration.
	RejectTranscriptionNotConfigured = "transcription_not_configured"
	// MaxFilenameBytes bounds an audio input's filename.
	MaxFilenameBytes = 255
)

// TranscriptRecord is the stored form of a transcript: the text the model
// produced and the name of the file it transcribed.
type TranscriptRecord struct {
	Text     string `json:"text"`
	Filename string `json:"filename"`
}

// IsTranscript reports whether ref names a stored TranscriptRecord.
func IsTranscript(ref content.ContentRef) bool {
	return ref.ProviderKind == ProviderKindTranscript
}

// DecodeTranscript reads a stored TranscriptRecord.
func DecodeTranscript(data []byte) (TranscriptRecord, error) {
	var r struct {
		Text     *string `json:"text"`
		Filename string  `json:"filename"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return TranscriptRecord{}, fmt.Errorf("transcript record: %w", err)
	}
	if r.Text == nil {
		return TranscriptRecord{}, fmt.Errorf("transcript record has no text")
	}
	return TranscriptRecord{Text: *r.Text, Filename: r.Filename}, nil
}

// ModelText is how a transcript is shown to a model: a label naming the
// file, then the text.
func (r TranscriptRecord) ModelText() string {
	return "[Transcript of " + r.Filename + "]\n" + r.Text
}

// AudioInput is one audio item of a run's input, by its index in the input.
type AudioInput struct {
	Index    int                `json:"index"`
	Audio    content.ContentRef `json:"audio"`
	Filename string             `json:"filename"`
}

// Transcript is the stored transcript of the audio item at Index.
type Transcript struct {
	Index         int                `json:"index"`
	Content       content.ContentRef `json:"content"`
	TokenEstimate TokenEstimate      `json:"tokenEstimate"`
	Preview       string             `json:"preview,omitempty"`
}

// RunTranscriptionRequested records that the run's audio is being
// transcribed, with which model.
type RunTranscriptionRequested struct {
	RunID         string        `json:"runId"`
	Transcription Transcription `json:"transcription"`
	Audio         []AudioInput  `json:"audio"`
}

// RunTranscriptionCompleted records one transcript per audio item.
type RunTranscriptionCompleted struct {
	RunID       string       `json:"runId"`
	Transcripts []Transcript `json:"transcripts"`
}

// TranscriptionResult reports the transcription of a run's audio: one
// transcript per audio item, in input order, or a Failure that fails the run.
type TranscriptionResult struct {
	AtMs        int64        `json:"atMs,omitempty"`
	RunID       string       `json:"runId"`
	Transcripts []Transcript `json:"transcripts,omitempty"`
	Failure     *Failure     `json:"failure,omitempty"`
}

func (TranscriptionResult) command() {}

// TranscribeWork is the host's part of a pending transcription.
type TranscribeWork struct {
	RunID         string
	Transcription Transcription
	Audio         []AudioInput
}

// AwaitingTranscription reports whether the run's audio transcription was
// requested and has no result yet.
func (r *Run) AwaitingTranscription() bool {
	return r.TranscriptionRequested && r.Transcripts == nil
}

// PendingTranscribeWork is the active run's pending transcription as work
// for the host; nil when runID is not awaiting one.
func (s *State) PendingTranscribeWork(runID string) *TranscribeWork {
	r := s.ActiveRun()
	if r == nil || r.ID != runID || !r.AwaitingTranscription() {
		return nil
	}
	w := &TranscribeWork{RunID: r.ID, Audio: audioInputs(r.Input)}
	if t := s.Config.Transcription; t != nil {
		w.Transcription = *t
	}
	return w
}

func audioInputs(items []InputItem) []AudioInput {
	var out []AudioInput
	for i, it := range items {
		if it.Kind == InputAudio {
			out = append(out, AudioInput{Index: i, Audio: it.Content, Filename: it.Filename})
		}
	}
	return out
}

func hasAudio(items []InputItem) bool {
	for _, it := range items {
		if it.Kind == InputAudio {
			return true
		}
	}
	return false
}

func validateTranscription(t *Transcription) error {
	if t != nil && (t.ProviderID == "" || t.Model == "") {
		return reject(RejectInvalidConfiguration, "transcription needs providerId and model")
	}
	return nil
}

// validItemKind checks what an input item's kind requires beyond a valid ref.
func validItemKind(i int, it InputItem) error {
	switch it.Kind {
	case "":
		if it.Filename != "" {
			return reject(RejectInvalidInput, "input[%d]: a filename belongs to audio input only", i)
		}
	case InputAudio:
		if !strings.HasPrefix(it.Content.MediaType, "audio/") {
			return reject(RejectInvalidInput, "input[%d]: audio input has media type %q, want audio/*", i, it.Content.MediaType)
		}
		if err := ValidateFilename(it.Filename); err != nil {
			return reject(RejectInvalidInput, "input[%d]: %v", i, err)
		}
	default:
		return reject(RejectInvalidInput, "input[%d] has kind %q; input is text or %s", i, it.Kind, InputAudio)
	}
	return nil
}

// ValidateFilename accepts a plain file name: 1 to MaxFilenameBytes bytes of
// UTF-8 without path separators or control characters.
func ValidateFilename(name string) error {
	if name == "" || len(name) > MaxFilenameBytes {
		return fmt.Errorf("filename must be 1 to %d bytes", MaxFilenameBytes)
	}
	if !utf8.ValidString(name) || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return fmt.Errorf("filename %q is not a plain file name", name)
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("filename contains a control character")
		}
	}
	return nil
}

// planTranscription runs before a run's first turn when its input holds
// audio: it requests the transcription, then hands the host the work until
// the transcripts are committed.
func planTranscription(s *State, r *Run, at int64) (Intent, bool) {
	if r.InputConsumed || r.Transcripts != nil || !hasAudio(r.Input) {
		return Intent{}, false
	}
	cfg := s.Config.Transcription
	if cfg == nil {
		// Admission refuses audio without a configuration and the config
		// cannot change while a run waits; a log that says otherwise
		// fails the run rather than the session.
		b := s.newBatch(at)
		b.endRun(r.ID, KindRunFailed, RunFailed{RunID: r.ID, Error: Failure{Kind: FailureTranscription, Message: "the session has no transcription configuration"}})
		return appendIntent(s, b), true
	}
	if !r.TranscriptionRequested {
		b := s.newBatch(at)
		b.add(KindRunTranscriptionRequested, runJoins(r.ID), RunTranscriptionRequested{RunID: r.ID, Transcription: *cfg, Audio: audioInputs(r.Input)})
		return appendIntent(s, b), true
	}
	return Intent{Kind: IntentTranscribe, Transcribe: s.PendingTranscribeWork(r.ID)}, true
}

// runInputs are a run's input items as the entries of its first turn: text
// as itself, audio as its transcript with the audio as provenance.
func runInputs(r *Run) []EntryInput {
	out := userMessages(r.Input)
	for _, tr := range r.Transcripts {
		if tr.Index < 0 || tr.Index >= len(out) {
			continue // admission checked the indices
		}
		audio := r.Input[tr.Index].Content
		e := &out[tr.Index]
		e.Content, e.TokenEstimate, e.Preview, e.ProvenanceRef = tr.Content, tr.TokenEstimate, tr.Preview, &audio
	}
	return out
}

func admitTranscriptionResult(s *State, c TranscriptionResult) (Admission, error) {
	r := s.ActiveRun()
	if r == nil || r.ID != c.RunID || !r.AwaitingTranscription() {
		return Admission{}, reject(RejectStaleResult, "run %s has no transcription in flight", c.RunID)
	}
	b := s.newBatch(c.AtMs)
	if c.Failure != nil {
		f := *c.Failure
		if f.Kind == "" {
			f.Kind = FailureTranscription
		}
		if f.Ref != nil {
			if err := f.Ref.Validate(); err != nil {
				return Admission{}, reject(RejectInvalidInput, "failure ref: %v", err)
			}
		}
		b.endRun(r.ID, KindRunFailed, RunFailed{RunID: r.ID, Error: f})
		return Admission{RunID: r.ID, Status: StatusFailed, Proposals: b.props}, nil
	}
	want := audioInputs(r.Input)
	if len(c.Transcripts) != len(want) {
		return Admission{}, reject(RejectInvalidInput, "%d transcripts for %d audio inputs", len(c.Transcripts), len(want))
	}
	for i, tr := range c.Transcripts {
		if tr.Index != want[i].Index {
			return Admission{}, reject(RejectInvalidInput, "transcripts[%d] is for input %d, want input %d", i, tr.Index, want[i].Index)
		}
		if err := tr.Content.Validate(); err != nil {
			return Admission{}, reject(RejectInvalidInput, "transcripts[%d]: %v", i, err)
		}
		if tr.Content.MediaType != MediaTranscript || tr.Content.ProviderKind != ProviderKindTranscript {
			return Admission{}, reject(RejectInvalidInput, "transcripts[%d] is %s (%s), want %s (%s)", i, tr.Content.MediaType, tr.Content.ProviderKind, MediaTranscript, ProviderKindTranscript)
		}
	}
	b.add(KindRunTranscriptionCompleted, runJoins(r.ID), RunTranscriptionCompleted{RunID: r.ID, Transcripts: c.Transcripts})
	return Admission{RunID: r.ID, Status: StatusRunning, Proposals: b.props}, nil
}

// applyTranscription folds the transcription events of run r.
func (s *State) applyTranscription(ev Event, r *Run) error {
	if s.Active != r.ID || r.InputConsumed {
		return fmt.Errorf("run %s is not waiting for its first turn", r.ID)
	}
	switch ev.Kind {
	case KindRunTranscriptionRequested:
		if r.TranscriptionRequested {
			return fmt.Errorf("run %s already requested its transcription", r.ID)
		}
		r.TranscriptionRequested = true
	case KindRunTranscriptionCompleted:
		p, err := decode[RunTranscriptionCompleted](ev)
		if err != nil {
			return err
		}
		if !r.AwaitingTranscription() || len(p.Transcripts) == 0 {
			return fmt.Errorf("run %s has no transcription in flight", r.ID)
		}
		r.Transcripts = p.Transcripts
	}
	return nil
}
