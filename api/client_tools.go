package api

import (
	"context"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// The methods of client tools: the calls that wait for the client, and the
// client's results.
const (
	MethodToolsPending = "session/tools/pending"
	MethodToolsSubmit  = "session/tools/submit"
)

func clientToolRoutes() map[string]method {
	return map[string]method{
		MethodToolsPending: handler(call.pendingTools).session(),
		MethodToolsSubmit:  handler(call.submitTool).session("unknown_call", "call_answered", "invalid_input", KindMissingBlob),
	}
}

// PendingCall is a call to a client tool that waits for its result.
// Arguments is the model's arguments, as the JSON text it wrote.
type PendingCall struct {
	RunID     string `json:"runId"`
	CallID    string `json:"callId"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type ToolsPendingResult struct {
	Calls []PendingCall `json:"calls"`
}

// ToolOutput is a client tool's result: on the wire a string (the text)
// or a ref object blobs/put returned (Ref).
type ToolOutput struct {
	Text string
	Ref  *RefParam
}

// UnmarshalJSONFrom decodes an output with the decoder's own (strict)
// options.
func (o *ToolOutput) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '"':
		return jsonv2.UnmarshalDecode(dec, &o.Text)
	case '{':
		var r RefParam
		if err := jsonv2.UnmarshalDecode(dec, &r); err != nil {
			return err
		}
		o.Ref = &r
		return nil
	}
	return &paramError{msg: "expected the output's text, or the ref object blobs/put returned"}
}

func (o ToolOutput) MarshalJSON() ([]byte, error) {
	if o.Ref != nil {
		return jsonv2.Marshal(o.Ref)
	}
	return jsonv2.Marshal(o.Text)
}

type ToolSubmitParams struct {
	SessionID string      `json:"sessionId"`
	CallID    string      `json:"callId"`
	Output    *ToolOutput `json:"output"`
	// IsError says the tool failed: the model sees the output as an error.
	IsError bool `json:"isError,omitempty"`
}

func (s call) pendingTools(ctx context.Context, p SessionParams) (ToolsPendingResult, error) {
	return s.pendingCalls(ctx, p, (*core.Run).AwaitingCalls)
}

// pendingCalls lists the calls of the active run that which picks, with
// their arguments.
func (s call) pendingCalls(ctx context.Context, p SessionParams, which func(*core.Run) []core.ToolCall) (ToolsPendingResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return ToolsPendingResult{}, err
	}
	var runID string
	var calls []core.ToolCall
	if err := s.host.Inspect(ctx, p.SessionID, func(st *core.State) {
		if r := st.ActiveRun(); r != nil {
			runID, calls = r.ID, which(r)
		}
	}); err != nil {
		return ToolsPendingResult{}, err
	}
	out := ToolsPendingResult{Calls: []PendingCall{}}
	for _, c := range calls {
		args, err := s.host.Blobs().Get(ctx, c.Arguments.Digest)
		if err != nil {
			return ToolsPendingResult{}, err
		}
		text := string(args)
		if !utf8.ValidString(text) {
			text = strings.ToValidUTF8(text, "\uFFFD")
		}
		out.Calls = append(out.Calls, PendingCall{RunID: runID, CallID: c.CallID, Name: c.Name, Arguments: text})
	}
	return out, nil
}

func (s call) submitTool(ctx context.Context, p ToolSubmitParams) (RunSummary, error) {
	if err := requireSession(p.SessionID); err != nil {
		return RunSummary{}, err
	}
	switch {
	case p.CallID == "":
		return RunSummary{}, invalidParams("callId is required")
	case p.Output == nil:
		return RunSummary{}, invalidParams("output is required: the result's text, or the ref object blobs/put returned")
	}
	var data []byte
	var ref content.ContentRef
	var texts staged
	if p.Output.Ref != nil {
		ref = p.Output.Ref.Ref(content.MediaText)
		if err := s.admit(ctx, []content.Digest{ref.Digest}); err != nil {
			return RunSummary{}, err
		}
		var err error
		if data, err = s.host.Blobs().Get(ctx, ref.Digest); err != nil {
			return RunSummary{}, err
		}
	} else {
		data = []byte(p.Output.Text)
		ref = content.Ref(data, content.MediaText, "")
		texts = staged{data}
	}
	preview := provider.Preview(string(data))
	if !utf8.Valid(data) {
		preview = ""
	}
	cmd := core.SubmitToolOutput{AtMs: s.host.NowMs(), CallID: p.CallID, IsError: p.IsError,
		Result: core.EntryInput{Content: ref, TokenEstimate: provider.Estimate(data), Preview: preview}}
	adm, err := s.submitStaged(ctx, p.SessionID, cmd, texts)
	if err != nil {
		return RunSummary{}, err
	}
	return RunSummary{RunID: adm.RunID, Status: adm.Status}, nil
}

// PendingTools calls session/tools/pending.
func (c *Client) PendingTools(ctx context.Context, sessionID string) (ToolsPendingResult, error) {
	var r ToolsPendingResult
	return r, c.Call(ctx, MethodToolsPending, SessionParams{SessionID: sessionID}, &r)
}

// SubmitTool calls session/tools/submit.
func (c *Client) SubmitTool(ctx context.Context, p ToolSubmitParams) (RunSummary, error) {
	var r RunSummary
	return r, c.Call(ctx, MethodToolsSubmit, p, &r)
}
