package api

import (
	"strconv"
	"strings"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// audioInput describes an audio input part: {type:"audio", ref, filename},
// where ref is the ContentRef blobs/put returned for bytes uploaded under an
// audio/* media type. The bytes must be in the universe already (the
// caller admits the refs of all parts in one batch); the session
// transcribes them before the turn that consumes them.
func audioInput(i int, part InputPart) (core.InputItem, error) {
	at := "input[" + strconv.Itoa(i) + "]"
	switch {
	case part.Text != "":
		return core.InputItem{}, invalidParams(at + ".text belongs to text parts; audio names its bytes with ref")
	case part.Ref == nil || part.Ref.Digest.IsZero():
		return core.InputItem{}, invalidParams(at + ".ref is required: the ref blobs/put returned for the audio")
	case part.Ref.MediaType == "":
		return core.InputItem{}, invalidParams(at + ".ref: audio needs its media type; pass the ref object blobs/put returned, not only its digest")
	case !strings.HasPrefix(part.Ref.MediaType, "audio/"):
		return core.InputItem{}, invalidParams(at + ".ref.mediaType " + strconv.Quote(part.Ref.MediaType) + " is not audio/*; upload the audio with blobs/put and its audio media type")
	}
	if err := core.ValidateFilename(part.Filename); err != nil {
		return core.InputItem{}, invalidParams(at + ".filename: " + err.Error())
	}
	return core.InputItem{Kind: core.InputAudio, Filename: part.Filename,
		Content: content.ContentRef{Digest: part.Ref.Digest, MediaType: part.Ref.MediaType}, Preview: "[audio " + part.Filename + "]"}, nil
}
