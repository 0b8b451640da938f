package core_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

var whisper = core.Transcription{ProviderID: "openai", Model: "whisper-1"}

func transcribing(tools ...string) core.SessionConfig {
	cfg := testConfig(tools...)
	t := whisper
	cfg.Transcription = &t
	return cfg
}

// audio is an audio input item naming uploaded bytes.
func audio(filename, data string) core.InputItem {
	return core.InputItem{Kind: core.InputAudio, Filename: filename, Content: content.Ref([]byte(data), "audio/mp4", ""), Preview: "[audio " + filename + "]"}
}

func transcriptRef(text, filename string) content.ContentRef {
	raw, err := json.Marshal(core.TranscriptRecord{Text: text, Filename: filename})
	if err != nil {
		panic(err)
	}
	return content.Ref(raw, core.MediaTranscript, core.ProviderKindTranscript)
}

// transcribed answers a transcription with text for every audio item.
func transcribed(at int64, w *core.TranscribeWork, text string) core.TranscriptionResult {
	res := core.TranscriptionResult{AtMs: at, RunID: w.RunID}
	for _, a := range w.Audio {
		res.Transcripts = append(res.Transcripts, core.Transcript{Index: a.Index, Content: transcriptRef(text, a.Filename),
			TokenEstimate: core.TokenEstimate{Tokens: int64(len(text)/4 + 8), Quality: core.EstimateHeuristic}, Preview: text})
	}
	return res
}

func (h *harness) expectTranscribe() *core.TranscribeWork {
	h.t.Helper()
	in := h.next()
	if in.Kind != core.IntentTranscribe || in.Transcribe == nil {
		h.t.Fatalf("intent %s, want transcribe", in.Kind)
	}
	return in.Transcribe
}

func TestSpec_AudioInputNeedsATranscriptionConfigAndAWellFormedItem(t *testing.T) {
	h := newHarness(t, testConfig())
	h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: []core.InputItem{audio("memo.m4a", "m4a")}}, core.RejectTranscriptionNotConfigured)

	h = newHarness(t, transcribing())
	notAudio := audio("memo.txt", "x")
	notAudio.Content.MediaType = content.MediaText
	noName := audio("", "x")
	pathName := audio("../memo.m4a", "x")
	oddKind := audio("memo.m4a", "x")
	oddKind.Kind = "video"
	namedText := input("hi")[0]
	namedText.Filename = "hi.txt"
	for name, item := range map[string]core.InputItem{"non-audio media": notAudio, "no filename": noName, "path filename": pathName, "unknown kind": oddKind, "text with filename": namedText} {
		rej := h.rejection(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: []core.InputItem{item}}, core.RejectInvalidInput)
		if !strings.Contains(rej.Message, "input[0]") {
			t.Errorf("%s: rejection %q does not name the item", name, rej.Message)
		}
	}

	// Steering takes text only: audio would need a transcription mid-run.
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	h.expectGenerate()
	h.rejection(core.Steer{AtMs: h.tick(), SteeringID: "st1", Input: []core.InputItem{audio("memo.m4a", "x")}}, core.RejectInvalidInput)

	cfg := transcribing()
	cfg.Transcription.Model = ""
	if err := core.ValidateConfig(cfg); err == nil || !strings.Contains(err.Error(), core.RejectInvalidConfiguration) {
		t.Fatalf("a transcription without a model: %v", err)
	}
}

func TestSpec_AudioIsTranscribedBeforeTheTurnThatConsumesIt(t *testing.T) {
	h := newHarness(t, transcribing())
	start := len(h.events)
	memo := audio("memo.m4a", "m4a bytes")
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: []core.InputItem{input("summarize this")[0], memo}})

	w := h.expectTranscribe()
	want := []core.AudioInput{{Index: 1, Audio: memo.Content, Filename: "memo.m4a"}}
	if w.RunID != "r1" || w.Transcription != whisper || !slices.Equal(w.Audio, want) {
		t.Fatalf("transcribe work %+v", w)
	}
	requireKinds(t, h.kindsSince(start), core.KindRunAccepted, core.KindRunTranscriptionRequested)
	req := payload[core.RunTranscriptionRequested](t, h.ofKind(core.KindRunTranscriptionRequested)[0])
	if req.RunID != "r1" || req.Transcription != whisper || !slices.Equal(req.Audio, want) {
		t.Fatalf("requested %+v", req)
	}
	if r := h.state().Run("r1"); !r.AwaitingTranscription() || r.Turns != 0 {
		t.Fatalf("run %+v", r)
	}
	// The intent repeats until a result is committed.
	if again := h.next(); again.Kind != core.IntentTranscribe {
		t.Fatalf("second Next: %s", again.Kind)
	}

	res := transcribed(h.tick(), w, "buy acorns")
	h.mustAdmit(res)
	g := h.expectGenerate()
	var user []core.Entry
	for _, e := range g.Entries {
		if e.Kind == core.EntryMessage && e.Role == core.RoleUser {
			user = append(user, e)
		}
	}
	if len(user) != 2 || user[0].Preview != "summarize this" || user[0].ProvenanceRef != nil {
		t.Fatalf("user entries %+v", user)
	}
	tr := user[1]
	if tr.Content != res.Transcripts[0].Content || tr.ProvenanceRef == nil || *tr.ProvenanceRef != memo.Content ||
		tr.Source != core.SourceUser || tr.Origin != "user:" || tr.Preview != "buy acorns" || tr.TokenEstimate != res.Transcripts[0].TokenEstimate {
		t.Fatalf("transcript entry %+v", tr)
	}
	done := payload[core.RunTranscriptionCompleted](t, h.ofKind(core.KindRunTranscriptionCompleted)[0])
	if done.RunID != "r1" || !slices.Equal(done.Transcripts, res.Transcripts) {
		t.Fatalf("completed %+v", done)
	}
	h.answer("noted")
	h.expectIdle()
	requireKinds(t, h.kindsSince(start),
		core.KindRunAccepted, core.KindRunTranscriptionRequested, core.KindRunTranscriptionCompleted,
		core.KindTurnStarted, core.KindContextEntriesApplied, core.KindTurnPlanned, core.KindTurnGenerationRequested,
		core.KindTurnGenerationCompleted, core.KindContextEntriesApplied, core.KindTurnCompleted, core.KindRunCompleted)
	// The transcript stays in context for later runs; the audio only as provenance.
	if got := contextOf(h.state()); !slices.Equal(got, []string{"instructions:be brief", "message/user:summarize this", "message/user:buy acorns", "message/assistant:noted"}) {
		t.Fatalf("context %q", got)
	}
}

func TestSpec_TranscriptionFailureFailsTheRunAndTheQueueMovesOn(t *testing.T) {
	h := newHarness(t, transcribing())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: []core.InputItem{audio("call.wav", "wav")}})
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("next")})
	w := h.expectTranscribe()
	start := len(h.events)
	h.mustAdmit(core.TranscriptionResult{AtMs: h.tick(), RunID: w.RunID, Failure: &core.Failure{Message: "provider error (terminal, HTTP 400): unsupported format"}})
	r := h.state().Run("r1")
	if r.Status != core.StatusFailed || r.Error == nil || r.Error.Kind != core.FailureTranscription || !strings.Contains(r.Error.Message, "unsupported format") || r.Turns != 0 {
		t.Fatalf("run %+v error %+v", r, r.Error)
	}
	g := h.expectGenerate()
	if g.RunID != "r2" {
		t.Fatalf("next generation is for %s", g.RunID)
	}
	requireKinds(t, h.kindsSince(start)[:2], core.KindRunFailed, core.KindRunStarted)
	for _, e := range h.state().Context() {
		if e.RunID == "r1" {
			t.Fatalf("the failed run left entry %+v", e)
		}
	}
}

func TestSpec_TranscriptionResultsMustMatchThePendingWork(t *testing.T) {
	h := newHarness(t, transcribing())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: []core.InputItem{audio("a.m4a", "a"), input("and")[0], audio("b.m4a", "b")}})
	w := h.expectTranscribe()
	if len(w.Audio) != 2 || w.Audio[0].Index != 0 || w.Audio[1].Index != 2 {
		t.Fatalf("work %+v", w.Audio)
	}
	good := transcribed(h.tick(), w, "t")

	other := good
	other.RunID = "r9"
	h.rejection(other, core.RejectStaleResult)

	short := good
	short.Transcripts = good.Transcripts[:1]
	h.rejection(short, core.RejectInvalidInput)

	swapped := good
	swapped.Transcripts = []core.Transcript{good.Transcripts[1], good.Transcripts[0]}
	h.rejection(swapped, core.RejectInvalidInput)

	plain := transcribed(h.tick(), w, "t")
	plain.Transcripts[1].Content = text("not a record")
	h.rejection(plain, core.RejectInvalidInput)

	h.mustAdmit(good)
	h.rejection(good, core.RejectStaleResult) // already admitted
	g := h.expectGenerate()
	var got []string
	for _, e := range g.Entries[1:] {
		p := ""
		if e.ProvenanceRef != nil {
			p = e.ProvenanceRef.MediaType
		}
		got = append(got, e.Content.MediaType+"<"+p)
	}
	want := []string{core.MediaTranscript + "<audio/mp4", content.MediaText + "<", core.MediaTranscript + "<audio/mp4"}
	if !slices.Equal(got, want) {
		t.Fatalf("input entries in order\n got  %q\n want %q", got, want)
	}
}

func TestSpec_CancellingARunWhileItsAudioIsTranscribedDiscardsTheResult(t *testing.T) {
	h := newHarness(t, transcribing())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: []core.InputItem{audio("a.m4a", "a")}})
	w := h.expectTranscribe()
	h.mustAdmit(core.CancelRun{AtMs: h.tick(), RunID: "r1"})
	if r := h.state().Run("r1"); r.Status != core.StatusCancelled {
		t.Fatalf("run %s", r.Status)
	}
	h.rejection(transcribed(h.tick(), w, "late"), core.RejectStaleResult)
	h.expectIdle()
}

// A checkpoint taken while a transcription is pending resumes it.
func TestSpec_CheckpointKeepsAPendingTranscription(t *testing.T) {
	h := newHarness(t, transcribing())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: []core.InputItem{audio("a.m4a", "a")}})
	w := h.expectTranscribe()
	data, err := core.EncodeCheckpoint(h.state())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"transcriptionRequested":true`) {
		t.Fatalf("checkpoint %s", data)
	}
	s, err := core.DecodeCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	d := core.NewDrive(s)
	in := d.Next(h.tick())
	if in.Kind != core.IntentTranscribe || in.Transcribe.RunID != w.RunID || !slices.Equal(in.Transcribe.Audio, w.Audio) {
		t.Fatalf("resumed intent %s %+v", in.Kind, in.Transcribe)
	}
}

// Text input encodes as it did before audio existed, so older events and
// fingerprints are unchanged; audio's filename is part of its fingerprint.
func TestSpec_TextInputEncodingIsUnchangedByAudio(t *testing.T) {
	raw, err := json.Marshal(input("hi")[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `"kind"`) || strings.Contains(string(raw), `"filename"`) {
		t.Fatalf("text input encodes as %s", raw)
	}
	if got := core.InputFingerprint(input("x")); got != "in1:"+sha256Hex(text("x").Digest.String()+"\x00"+content.MediaText+"\x00") {
		t.Fatalf("text fingerprint changed: %s", got)
	}
	a, b := audio("a.m4a", "same"), audio("b.m4a", "same")
	if core.InputFingerprint([]core.InputItem{a}) == core.InputFingerprint([]core.InputItem{b}) {
		t.Fatal("audio fingerprints ignore the filename")
	}
}

func TestSpec_TranscriptRecordRendersWithItsFilename(t *testing.T) {
	rec, err := core.DecodeTranscript([]byte(`{"text":"hello","filename":"memo.m4a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.ModelText(); got != "[Transcript of memo.m4a]\nhello" {
		t.Fatalf("model text %q", got)
	}
	if _, err := core.DecodeTranscript([]byte(`{"filename":"memo.m4a"}`)); err == nil {
		t.Fatal("a record without text decoded")
	}
	if !core.IsTranscript(transcriptRef("x", "y")) || core.IsTranscript(text("x")) {
		t.Fatal("IsTranscript")
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
