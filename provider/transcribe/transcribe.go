// Package transcribe is the client of the OpenAI-compatible transcription
// endpoint, POST {base}/audio/transcriptions: a multipart form with the audio
// file and the model, answered by {"text": …}. OpenAI, Groq and local
// Whisper servers speak it. The endpoint and its key are resolved through
// provider/endpoint on every call, just before I/O, and never stored.
package transcribe

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"time"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/httpx"
)

// Path is appended to the endpoint's base URL.
const Path = "/audio/transcriptions"

// Request is one audio file to transcribe with a provider's model.
type Request struct {
	ProviderID string
	Model      string
	Audio      []byte
	Filename   string
	MediaType  string // the audio's media type, sent as the file part's Content-Type
}

// Client transcribes audio over plain net/http.
type Client struct {
	resolver endpoint.Resolver
	client   *http.Client
	now      func() time.Time // reads Retry-After dates
}

// New returns a client. client nil means a plain &http.Client{}.
func New(resolver endpoint.Resolver, client *http.Client) *Client {
	if client == nil {
		client = &http.Client{}
	}
	return &Client{resolver: resolver, client: client, now: time.Now}
}

// Transcribe sends the audio and returns the transcript text.
//
// Errors: endpoint resolution errors are the endpoint package's typed errors
// (a provider that speaks neither OpenAI API kind is an *endpoint.APIKindError:
// this endpoint is OpenAI's); HTTP and transport failures are
// *provider.Error, classified as retryable or terminal; a 2xx answer without
// a text field is a terminal *provider.Error; a cancelled ctx is ctx.Err().
func (c *Client) Transcribe(ctx context.Context, req Request) (string, error) {
	if req.Model == "" {
		return "", fmt.Errorf("transcribe: request has no model")
	}
	ep, err := c.resolver.Resolve(req.ProviderID)
	if err != nil {
		return "", fmt.Errorf("transcribe: %w", err)
	}
	if !ep.Admits(core.APIChatCompletions) && !ep.Admits(core.APIOpenAIResponses) {
		return "", fmt.Errorf("transcribe: %w", &endpoint.APIKindError{ProviderID: req.ProviderID, APIKind: core.APIChatCompletions, Admitted: append([]string(nil), ep.APIKinds...)})
	}
	body, contentType, err := Form(req)
	if err != nil {
		return "", err
	}
	headers := httpx.Bearer(ep.APIKey)
	if headers == nil {
		headers = map[string]string{}
	}
	headers["Content-Type"] = contentType // replaces httpx's JSON content type
	data, err := httpx.Post(ctx, httpx.Call{Client: c.client, Endpoint: ep, Path: Path, Body: body,
		Headers: headers, Now: c.now, Classify: httpx.OpenAIQuota})
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("transcribe: %w", ctx.Err())
		}
		return "", err
	}
	var out struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Text == nil {
		return "", &provider.Error{Status: http.StatusOK, Message: "the transcription response is not a JSON object with a text field"}
	}
	return *out.Text, nil
}

// Form builds the multipart body of req and its Content-Type. The boundary
// is derived from the request, so a retry sends the same bytes.
func Form(req Request) ([]byte, string, error) {
	h := sha256.New()
	for _, s := range []string{req.Model, req.Filename, req.MediaType} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write(req.Audio)
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary("cairn-" + hex.EncodeToString(h.Sum(nil))[:40]); err != nil {
		return nil, "", err
	}
	if err := w.WriteField("model", req.Model); err != nil {
		return nil, "", err
	}
	if err := w.WriteField("response_format", "json"); err != nil {
		return nil, "", err
	}
	mt := req.MediaType
	if mt == "" {
		mt = "application/octet-stream"
	}
	part, err := w.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {multipart.FileContentDisposition("file", req.Filename)},
		"Content-Type":        {mt},
	})
	if err != nil {
		return nil, "", err
	}
	if _, err := part.Write(req.Audio); err != nil {
		return nil, "", err
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}
