package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/cairn-agents/cairn/archive"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// Host is what the API needs from a host (runtime/local today, the Temporal
// gateway later): admission of commands and consistent reads.
type Host interface {
	CreateSession(ctx context.Context, id string, cfg core.SessionConfig, instructions *core.EntryInput) (string, error)
	Submit(ctx context.Context, sessionID string, cmd core.Command) (core.Admission, error)
	Inspect(ctx context.Context, sessionID string, fn func(*core.State)) error
	Changed(ctx context.Context, sessionID string) (int64, <-chan struct{}, error)
	Blobs() blob.Store
	Log() store.SessionLog
	// Files is the universe's workspaces and snapshots; nil when the host
	// keeps none (links and vfs methods are then refused).
	Files() runtime.Files
	NewID(prefix string) string
	NowMs() int64
}

// StatusHost is implemented by hosts that answer session/read from the
// session's live driver (a workflow query) instead of the log.
type StatusHost interface {
	SessionStatus(ctx context.Context, sessionID string) (SessionReadResult, error)
}

// LiveHost is implemented by hosts that hold live sessions in memory (the
// embedded host): InspectLive runs fn under the session's lock and reports
// true if the host holds the session now, and never loads it. session/read
// answers a live session from that state, which is the log's head, since
// the host is the session's only writer; other sessions from the store.
type LiveHost interface {
	InspectLive(sessionID string, fn func(*core.State)) bool
}

// RecentHost is implemented by hosts that keep the tail of a live
// session's log they committed (the embedded host): RecentEvents returns
// the events after after (at most limit, if limit > 0) and the head when
// that tail holds all of them up to the head, else false and
// session/events/read reads the log.
type RecentHost interface {
	RecentEvents(sessionID string, after int64, limit int) ([]core.Event, int64, bool)
}

// StagingHost is implemented by hosts that store the blobs a command
// brings (a run's input text) with the events that admit it: nothing is
// stored for a command the session refuses.
type StagingHost interface {
	SubmitWith(ctx context.Context, sessionID string, cmd core.Command, blobs [][]byte) (core.Admission, error)
}

// CheckpointHost is implemented by hosts that keep reducer checkpoints;
// session/read then loads state from the latest one and the event tail
// instead of replaying the whole log.
type CheckpointHost interface {
	Checkpoints() store.Checkpoints
}

// DefaultMaxBodyBytes bounds a request body (blobs/put carries base64 data).
const DefaultMaxBodyBytes = 16 << 20

// DefaultMaxResponseBytes bounds the results of one HTTP response (a whole
// batch's together).
const DefaultMaxResponseBytes = 64 << 20

// MaxBatch is the most calls one batch may hold.
const MaxBatch = 100

// Hosts selects the host that serves a request, from its bearer token
// (empty when the request has none). An error wrapping ErrUnauthorized is
// answered with HTTP 401 before the body is read.
type Hosts interface {
	HostFor(ctx context.Context, bearer string) (Host, error)
}

var nullID = json.RawMessage("null")

// ErrUnauthorized marks a missing or unknown API key.
var ErrUnauthorized = errors.New("unauthorized")

// SingleHost serves every request from one host, without a key: the
// embedded mode's one default universe.
type SingleHost struct{ Host Host }

// HostFor returns the one host.
func (s SingleHost) HostFor(context.Context, string) (Host, error) { return s.Host, nil }

// Server serves JSON-RPC 2.0 on POST /rpc.
type Server struct {
	hosts        Hosts
	apiKinds     []string
	validate     func(apiKind string, params json.RawMessage) error
	tools        []string
	mcpServers   []string
	provider     func(providerID, apiKind string) error
	window       func(core.ModelSelection, json.RawMessage) int64
	maxBodyBytes int64
	maxResponse  int64
	log          *slog.Logger
	grace        time.Duration // the collector's, for blobs/holders
	methods      map[string]method
	guard        guard
}

type method struct {
	call func(c call, ctx context.Context, params json.RawMessage) (any, error)
	// params and result are the types the call decodes and returns, and
	// errors the kinds it answers with besides commonErrors: the method's
	// entry in the OpenRPC document (rpc.discover).
	params, result reflect.Type
	errors         []string
}

// ServerOptions configure a Server.
type ServerOptions struct {
	// APIKinds are the API kinds with an adapter; sessions of other kinds are
	// rejected at creation.
	APIKinds []string
	// ValidateParams checks a session's provider parameters for its API
	// kind; nil accepts none.
	ValidateParams func(apiKind string, params json.RawMessage) error
	MaxBodyBytes   int64
	// MaxResponseBytes bounds the results of one response, a batch's
	// together; 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	Logger           *slog.Logger
	// RetentionGrace is the grace of this deployment's blob collector
	// (cairn serve --gc-grace), the default of blobs/holders' eligibility;
	// 0 means retention.DefaultGrace.
	RetentionGrace time.Duration
	// AllowedHosts are the host names (or IPs) a request's Host header may
	// name besides localhost and loopback IPs, on any port: the listen
	// address and the names the server is reached by.
	AllowedHosts []string
	// AllowedOrigins are the origins (scheme://host[:port]) besides the
	// server's own whose browser requests are served.
	AllowedOrigins []string
	// Tools are the tool names sessions may be granted; nil accepts any
	// (a tool the executor lacks is then unavailable to the model).
	Tools []string
	// MCPServers are the MCP servers whose tools sessions may be granted
	// ("SERVER.TOOL", "SERVER.*"); checked only when Tools is set.
	MCPServers []string
	// CheckProvider refuses, at session/create, a provider id this server
	// does not know or one that does not speak the API kind; nil accepts any.
	// A missing key is not its business: credentials may arrive later.
	CheckProvider func(providerID, apiKind string) error
	// ContextWindow is a session's model's context window in tokens, given
	// its model and provider parameters (0: unknown); a run that cannot fit
	// it is refused at admission, or compacts first
	// (core.StartRun.ContextWindow). nil refuses nothing.
	ContextWindow func(model core.ModelSelection, providerParams json.RawMessage) int64
}

// NewServer returns a server for one host, without authentication.
func NewServer(host Host, opt ServerOptions) *Server {
	return NewServerFor(SingleHost{host}, opt)
}

// NewServerFor returns a server whose requests pick their host through hosts.
func NewServerFor(hosts Hosts, opt ServerOptions) *Server {
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opt.MaxResponseBytes <= 0 {
		opt.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.RetentionGrace <= 0 {
		opt.RetentionGrace = retention.DefaultGrace
	}
	s := &Server{hosts: hosts, apiKinds: opt.APIKinds, validate: opt.ValidateParams, maxBodyBytes: opt.MaxBodyBytes, maxResponse: opt.MaxResponseBytes, log: opt.Logger, grace: opt.RetentionGrace,
		guard: newGuard(opt.AllowedHosts, opt.AllowedOrigins), tools: opt.Tools, mcpServers: opt.MCPServers, provider: opt.CheckProvider,
		window: opt.ContextWindow}
	s.methods = routes()
	return s
}

// Handler returns the HTTP handler: POST /rpc, the session stream, export
// and import, behind Protect.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /rpc", s.serveRPC)
	mux.HandleFunc("GET "+StreamPath, s.serveStream)
	mux.HandleFunc("POST "+ExportPath, s.serveExport)
	mux.HandleFunc("POST "+ImportPath, s.serveImport)
	return s.Protect(mux)
}

// Protect refuses requests to h whose Host is not this server's or whose
// Origin is foreign (see guard); wrap every route served beside the API
// with it.
func (s *Server) Protect(h http.Handler) http.Handler { return s.guard.wrap(h) }

func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	// Only a JSON body: a form or text/plain POST is what a page of another
	// origin can send without the browser asking the server first.
	if !isJSON(r.Header.Get("Content-Type")) {
		writeRefusal(w, http.StatusUnsupportedMediaType, KindUnsupportedMediaType,
			"send the request with Content-Type: application/json")
		return
	}
	host, err := s.hosts.HostFor(r.Context(), BearerToken(r))
	if err != nil {
		status, rpcErr := http.StatusUnauthorized, newError(CodeDomain, KindUnauthorized, "a valid API key is required: send Authorization: Bearer KEY")
		if !errors.Is(err, ErrUnauthorized) {
			s.log.Error("selecting host failed", "err", err)
			status, rpcErr = http.StatusInternalServerError, newError(CodeInternal, KindInternal, "internal error")
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
		writeJSON(w, status, Response{JSONRPC: "2.0", ID: nullID, Error: rpcErr})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, Response{JSONRPC: "2.0", ID: nullID,
				Error: newError(CodeInvalidRequest, KindBodyTooLarge, "request body exceeds the limit of "+itoa64(s.maxBodyBytes)+" bytes")})
			return
		}
		writeJSON(w, http.StatusBadRequest, Response{JSONRPC: "2.0", ID: nullID, Error: newError(CodeParseError, KindParseError, "could not read request body")})
		return
	}
	// Every result of this request draws on one budget, so a batch stops
	// producing large results once the response is full instead of
	// building them all first.
	budget := &responseBudget{left: s.maxResponse, limit: s.maxResponse}
	ctx := context.WithValue(r.Context(), budgetKey{}, budget)
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(trimmed, &batch); err != nil {
			writeJSON(w, http.StatusOK, Response{JSONRPC: "2.0", ID: nullID, Error: newError(CodeParseError, KindParseError, "invalid JSON: "+err.Error())})
			return
		}
		if len(batch) == 0 {
			writeJSON(w, http.StatusOK, Response{JSONRPC: "2.0", ID: nullID, Error: newError(CodeInvalidRequest, KindInvalidRequest, "empty batch")})
			return
		}
		if len(batch) > MaxBatch {
			writeJSON(w, http.StatusOK, Response{JSONRPC: "2.0", ID: nullID, Error: newError(CodeInvalidRequest, KindBatchTooLarge,
				fmt.Sprintf("a batch holds at most %d calls, this one %d; nothing of it ran", MaxBatch, len(batch)))})
			return
		}
		var out [][]byte
		for _, raw := range batch {
			if resp, ok := s.handle(ctx, host, raw, budget); ok {
				out = append(out, resp)
			}
		}
		if len(out) == 0 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte{'['})
		for i, resp := range out {
			if i > 0 {
				_, _ = w.Write([]byte{','})
			}
			_, _ = w.Write(resp)
		}
		_, _ = w.Write([]byte("]\n"))
		return
	}
	resp, ok := s.handle(ctx, host, trimmed, budget)
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(resp, '\n'))
}

// envelope is a request as received; ID is nil when absent (a notification).
type envelope struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      jsontext.Value `json:"id"`
	Method  string         `json:"method"`
	Params  jsontext.Value `json:"params"`
}

// handle serves one request and returns its encoded response; ok is false
// for a notification. A result that does not fit in what is left of the
// budget is answered with response_too_large.
func (s *Server) handle(ctx context.Context, host Host, raw []byte, budget *responseBudget) ([]byte, bool) {
	// Member names are matched exactly, as JSON-RPC spells them; trailing
	// data is a syntax error. Valid JSON that is not a request object is an
	// invalid request, not a parse error.
	var req envelope
	decodeErr := jsonv2.Unmarshal(raw, &req)
	var syntaxErr *jsontext.SyntacticError
	if errors.As(decodeErr, &syntaxErr) && syntaxErr.Err == jsontext.ErrDuplicateName && strings.HasPrefix(string(syntaxErr.JSONPointer), "/params/") {
		// The params' own decoding refuses it, as invalid params.
		decodeErr = jsonv2.Unmarshal(raw, &req, jsontext.AllowDuplicateNames(true))
	}
	if errors.As(decodeErr, &syntaxErr) && syntaxErr.Err != jsontext.ErrDuplicateName {
		return encodeError(nullID, newError(CodeParseError, KindParseError, "invalid JSON: "+strings.TrimPrefix(decodeErr.Error(), "jsontext: "))), true
	}
	// JSON-RPC 2.0: an id is a string, a number or null.
	switch req.ID.Kind() {
	case 0, '"', '0', 'n':
	default:
		return encodeError(nullID, newError(CodeInvalidRequest, KindInvalidRequest, "id must be a string, a number or null")), true
	}
	id := json.RawMessage(req.ID)
	if len(id) == 0 {
		id = nullID
	}
	if decodeErr != nil || req.JSONRPC != "2.0" || req.Method == "" {
		return encodeError(id, newError(CodeInvalidRequest, KindInvalidRequest, `a request is an object with "jsonrpc": "2.0" and a method name`)), true
	}
	m, found := s.methods[req.Method]
	var result any
	var err error
	if !found {
		err = newError(CodeMethodNotFound, KindMethodNotFound, "unknown method "+req.Method)
	} else {
		result, err = m.call(call{Server: s, host: host}, ctx, json.RawMessage(req.Params))
	}
	if len(req.ID) == 0 {
		return nil, false
	}
	if err != nil {
		e := s.toRPCError(req.Method, err)
		if found && errorSeen != nil {
			errorSeen(req.Method, e.Data.Kind)
		}
		return encodeError(id, e), true
	}
	data, err := json.Marshal(result)
	if err != nil {
		return encodeError(id, s.toRPCError(req.Method, err)), true
	}
	if err := budget.take(req.Method, int64(len(data))); err != nil {
		return encodeError(id, err), true
	}
	// Assembled by hand: marshalling a Response would copy the result twice more.
	out := make([]byte, 0, len(data)+len(id)+40)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"result":`...)
	out = append(out, data...)
	return append(out, '}'), true
}

// errorSeen, when set (by the package's tests), hears the kind of every
// error a method answers with, so the tests can hold the methods' declared
// errors (rpc.discover) to what they were seen to return.
var errorSeen func(method, kind string)

func encodeError(id json.RawMessage, e *Error) []byte {
	out, _ := json.Marshal(Response{JSONRPC: "2.0", ID: id, Error: e}) // plain data: cannot fail
	return out
}

// toRPCError maps domain errors to typed JSON-RPC errors. Unknown errors are
// logged and reported without detail, so internals never leak to clients.
func (s *Server) toRPCError(method string, err error) *Error {
	var rpcErr *Error
	var rej *core.Rejection
	var missing *blob.MissingError
	var notFound *blob.NotFoundError
	var refused *archive.Error
	switch {
	case errors.As(err, &rpcErr):
		return rpcErr
	case errors.As(err, &refused):
		return newError(CodeDomain, refused.Kind, refused.Detail())
	case errors.As(err, &rej):
		e := newError(CodeDomain, rej.Kind, rej.Message)
		e.Data.Expected, e.Data.Actual = rej.Expected, rej.Actual
		return e
	case errors.Is(err, store.ErrSessionNotFound):
		return newError(CodeDomain, KindNotFound, err.Error())
	case errors.Is(err, runtime.ErrHistoryIncomplete):
		return newError(CodeDomain, runtime.KindHistoryIncomplete, err.Error())
	case errors.As(err, &missing):
		e := newError(CodeDomain, KindMissingBlob, missing.Error())
		for _, d := range missing.Digests {
			e.Data.Missing = append(e.Data.Missing, d.String())
		}
		return e
	case errors.As(err, &notFound):
		return newError(CodeDomain, KindNotFound, notFound.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return newError(CodeInternal, KindInternal, "request cancelled")
	}
	s.log.Error("request failed", "method", method, "err", err)
	return newError(CodeInternal, KindInternal, "internal error")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func invalidParams(msg string) error { return newError(CodeInvalidParams, KindInvalidParams, msg) }

// BearerToken returns the token of an "Authorization: Bearer" header, or "".
func BearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}
