package api_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

var whisper = &core.Transcription{ProviderID: "openai", Model: "whisper-1"}

func audioPart(ref content.ContentRef, filename string) []api.InputPart {
	return []api.InputPart{{Type: "text", Text: "what does it say?"}, {Type: "audio", Ref: refp(ref), Filename: filename}}
}

func TestAudioInput_PartsAreCheckedBeforeAdmission(t *testing.T) {
	e := newEnv(t)
	bg := context.Background()
	id := e.create(t, api.CreateSessionParams{Transcription: whisper})
	start := func(parts []api.InputPart) func() error {
		return func() error {
			_, err := e.c.StartRun(bg, api.RunStartParams{SessionID: id, Input: parts})
			return err
		}
	}

	ghost := content.Ref([]byte("never uploaded"), "audio/mp4", "")
	rpcErr := e.rejected(t, id, api.KindMissingBlob, start(audioPart(ghost, "memo.m4a")))
	if want := []string{ghost.Digest.String()}; !reflect.DeepEqual(rpcErr.Data.Missing, want) {
		t.Fatalf("missing %v, want %v", rpcErr.Data.Missing, want)
	}

	notes, err := e.c.PutBlob(bg, []byte("plain notes"), "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	e.rejected(t, id, api.KindInvalidParams, start(audioPart(notes.Ref, "notes.txt")))

	memo, err := e.c.PutBlob(bg, []byte("m4a bytes"), "audio/mp4")
	if err != nil {
		t.Fatal(err)
	}
	e.rejected(t, id, api.KindInvalidParams, start(audioPart(memo.Ref, "")))
	e.rejected(t, id, api.KindInvalidParams, start(audioPart(memo.Ref, "../memo.m4a")))
	e.rejected(t, id, api.KindInvalidParams, start([]api.InputPart{{Type: "audio", Filename: "memo.m4a"}}))
	e.rejected(t, id, api.KindInvalidParams, start([]api.InputPart{{Type: "video", Ref: refp(memo.Ref), Filename: "memo.m4a"}}))

	plain := e.create(t, api.CreateSessionParams{})
	e.rejected(t, plain, core.RejectTranscriptionNotConfigured, func() error {
		_, err := e.c.StartRun(bg, api.RunStartParams{SessionID: plain, Input: audioPart(memo.Ref, "memo.m4a")})
		return err
	})

	_, err = e.c.CreateSession(bg, api.CreateSessionParams{Model: testModel(), Transcription: &core.Transcription{ProviderID: "openai"}})
	wantKind(t, err, core.RejectInvalidConfiguration)
}

// An admitted audio part is recorded as audio input with its filename; a
// server without a transcription client fails the run with a clear error.
func TestAudioInput_IsRecordedAndTranscribedBeforeTheTurn(t *testing.T) {
	e := newEnv(t)
	bg := context.Background()
	id := e.create(t, api.CreateSessionParams{Transcription: whisper})
	memo, err := e.c.PutBlob(bg, []byte("m4a bytes"), "audio/mp4")
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.c.StartRun(bg, api.RunStartParams{SessionID: id, Input: audioPart(memo.Ref, "memo.m4a")})
	if err != nil {
		t.Fatal(err)
	}
	got := e.waitStatus(t, id, run.RunID, core.StatusFailed)
	if got.Error == nil || got.Error.Kind != core.FailureTranscription || got.Turns != 0 || e.model.calls() != 0 {
		t.Fatalf("run %+v error %+v, %d model calls", got, got.Error, e.model.calls())
	}
	var accepted core.RunAccepted
	var requested bool
	for _, ev := range e.events(t, id) {
		switch ev.Kind {
		case core.KindRunAccepted:
			if err := json.Unmarshal(ev.Payload, &accepted); err != nil {
				t.Fatal(err)
			}
		case core.KindRunTranscriptionRequested:
			requested = true
		}
	}
	if len(accepted.Input) != 2 || accepted.Input[1].Kind != core.InputAudio || accepted.Input[1].Filename != "memo.m4a" ||
		accepted.Input[1].Content != memo.Ref || accepted.Input[0].Kind != "" || !requested {
		t.Fatalf("accepted input %+v, transcription requested %v", accepted.Input, requested)
	}
}
