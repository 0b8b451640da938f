package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/transcribe"
)

// Transcriber turns audio into text with a provider's transcription model
// (transcribe.Client speaks the OpenAI-compatible endpoint).
type Transcriber interface {
	Transcribe(ctx context.Context, req transcribe.Request) (string, error)
}

var _ Transcriber = (*transcribe.Client)(nil)

// Transcribe is the preprocessing executor of audio input: it transcribes
// every audio item of w with the session's transcription model, stores each
// transcript as a core.TranscriptRecord and returns the result to admit. A
// retryable *provider.Error may be retried by the host; any other error
// should become FailedTranscription.
func (x *Executor) Transcribe(ctx context.Context, w core.TranscribeWork) (core.TranscriptionResult, error) {
	res := core.TranscriptionResult{RunID: w.RunID}
	if x.Transcriber == nil {
		res.Failure = &core.Failure{Kind: core.FailureTranscription, Message: "this server has no transcription client"}
		return res, nil
	}
	for _, a := range w.Audio {
		data, err := x.Blobs.Get(ctx, a.Audio.Digest)
		if err != nil {
			return core.TranscriptionResult{RunID: w.RunID}, fmt.Errorf("loading audio %s: %w", a.Filename, err)
		}
		text, err := x.Transcriber.Transcribe(ctx, transcribe.Request{ProviderID: w.Transcription.ProviderID, Model: w.Transcription.Model,
			Audio: data, Filename: a.Filename, MediaType: a.Audio.MediaType})
		if err != nil {
			return core.TranscriptionResult{RunID: w.RunID}, fmt.Errorf("transcribing %s: %w", a.Filename, err)
		}
		tr, err := StoreTranscript(ctx, x.Blobs, a.Index, core.TranscriptRecord{Text: text, Filename: a.Filename})
		if err != nil {
			return core.TranscriptionResult{RunID: w.RunID}, err
		}
		res.Transcripts = append(res.Transcripts, tr)
	}
	return res, nil
}

// StoreTranscript stores a transcript record under its own media type and
// provider kind and describes it; its estimate is of the text the model sees.
func StoreTranscript(ctx context.Context, blobs blob.Store, index int, rec core.TranscriptRecord) (core.Transcript, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return core.Transcript{}, err
	}
	ref, err := blob.PutRef(ctx, blobs, bytes.TrimSuffix(buf.Bytes(), []byte("\n")), core.MediaTranscript, core.ProviderKindTranscript)
	if err != nil {
		return core.Transcript{}, fmt.Errorf("storing the transcript of %s: %w", rec.Filename, err)
	}
	return core.Transcript{Index: index, Content: ref, TokenEstimate: provider.Estimate([]byte(rec.ModelText())), Preview: provider.Preview(rec.Text)}, nil
}

// FailedTranscription is the result of a transcription the host will not
// retry: the run fails with a message that says which file and why (provider
// and endpoint messages never carry secrets).
func FailedTranscription(w core.TranscribeWork, err error) core.TranscriptionResult {
	f := core.Failure{Kind: core.FailureTranscription, Message: "the transcription call failed at the runtime boundary"}
	var pe *provider.Error
	switch {
	case errors.As(err, &pe), errors.Is(err, endpoint.ErrMissingKey), errors.Is(err, endpoint.ErrUnknownProvider), errors.Is(err, endpoint.ErrConfig):
		f.Message = err.Error()
	case errors.Is(err, blob.ErrNotFound):
		f.Message = "the audio input is missing from the store"
	}
	return core.TranscriptionResult{RunID: w.RunID, Failure: &f}
}
