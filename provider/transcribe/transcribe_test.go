package transcribe_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/provider/transcribe"
)

const key = "sk-test-secret-key-1234"

var audio = []byte("ID3\x00\x01fake m4a bytes\r\n--not-a-boundary\x00\xff")

func server(t *testing.T, h http.HandlerFunc) (*transcribe.Client, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	res := endpoint.Static{
		"openai":    {BaseURL: srv.URL + "/v1", APIKey: key, APIKinds: []string{core.APIChatCompletions, core.APIOpenAIResponses}},
		"anthropic": {BaseURL: srv.URL, APIKey: key, APIKinds: []string{core.APIAnthropicMessages}},
	}
	return transcribe.New(res, srv.Client()), &calls
}

func request() transcribe.Request {
	return transcribe.Request{ProviderID: "openai", Model: "whisper-1", Audio: audio, Filename: `memo "draft".m4a`, MediaType: "audio/mp4"}
}

func TestClient_SendsTheAudioAsAMultipartFormWithTheModelAndTheKey(t *testing.T) {
	c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/transcriptions" {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("Authorization %q", got)
		}
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data; boundary=") {
			t.Errorf("Content-Type %q", r.Header.Get("Content-Type"))
		}
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Errorf("parse form: %v", err)
			return
		}
		if got := r.MultipartForm.Value["model"]; len(got) != 1 || got[0] != "whisper-1" {
			t.Errorf("model %q", got)
		}
		files := r.MultipartForm.File["file"]
		if len(files) != 1 {
			t.Errorf("%d files", len(files))
			return
		}
		fh := files[0]
		if fh.Filename != `memo "draft".m4a` || fh.Header.Get("Content-Type") != "audio/mp4" {
			t.Errorf("file part %q %q", fh.Filename, fh.Header.Get("Content-Type"))
		}
		f, _ := fh.Open()
		data, _ := io.ReadAll(f)
		if !bytes.Equal(data, audio) {
			t.Errorf("file bytes %q", data)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"Buy acorns.","usage":{"type":"duration","seconds":3}}`)
	})
	text, err := c.Transcribe(context.Background(), request())
	if err != nil || text != "Buy acorns." {
		t.Fatalf("transcribe: %q, %v", text, err)
	}
}

func TestForm_IsTheSameBytesOnEveryAttempt(t *testing.T) {
	a, ta, err := transcribe.Form(request())
	if err != nil {
		t.Fatal(err)
	}
	b, tb, _ := transcribe.Form(request())
	if !bytes.Equal(a, b) || ta != tb {
		t.Fatal("two forms of one request differ")
	}
	other := request()
	other.Model = "whisper-2"
	c, _, _ := transcribe.Form(other)
	if bytes.Equal(a, c) {
		t.Fatal("the model is not in the form")
	}
}

func TestClient_ClassifiesProviderErrors(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		header    map[string]string
		body      string
		retryable bool
		after     time.Duration
	}{
		{"rate limit waits", 429, map[string]string{"Retry-After": "7"}, `{"error":{"message":"slow down","type":"rate_limit"}}`, true, 7 * time.Second},
		{"server error retries", 503, nil, `{"error":{"message":"overloaded"}}`, true, 0},
		{"bad audio is terminal", 400, nil, `{"error":{"message":"Invalid file format.","type":"invalid_request_error"}}`, false, 0},
		{"exhausted quota is terminal", 429, nil, `{"error":{"message":"quota","code":"insufficient_quota"}}`, false, 0},
		{"an echoed key is redacted", 401, nil, `{"error":{"message":"Incorrect API key provided: ` + key + `"}}`, false, 0},
		{"a 2xx without text is terminal", 200, nil, `{"transcript":"x"}`, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			_, err := c.Transcribe(context.Background(), request())
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want *provider.Error", err)
			}
			if pe.Retryable != tc.retryable || pe.RetryAfter != tc.after || pe.Status != tc.status {
				t.Fatalf("classified %+v", pe)
			}
			if strings.Contains(err.Error(), key) {
				t.Fatalf("the key leaked: %v", err)
			}
		})
	}
}

func TestClient_RefusesEndpointsThatAreNotOpenAICompatible(t *testing.T) {
	c, calls := server(t, func(w http.ResponseWriter, r *http.Request) { t.Error("a request was sent") })
	req := request()
	req.ProviderID = "anthropic"
	if _, err := c.Transcribe(context.Background(), req); !errors.Is(err, endpoint.ErrAPIKindNotAdmitted) {
		t.Fatalf("anthropic endpoint: %v", err)
	}
	req.ProviderID = "nobody"
	if _, err := c.Transcribe(context.Background(), req); !errors.Is(err, endpoint.ErrUnknownProvider) {
		t.Fatalf("unknown provider: %v", err)
	}
	if calls.Load() != 0 {
		t.Fatalf("%d requests sent", calls.Load())
	}
}
