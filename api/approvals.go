package api

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// The methods of approvals: the calls that wait for a person's decision,
// and the decisions.
const (
	MethodApprovalsPending = "session/approvals/pending"
	MethodApprovalsDecide  = "session/approvals/decide"
)

func approvalRoutes() map[string]method {
	return map[string]method{
		MethodApprovalsPending: handler(call.pendingApprovals).session(),
		MethodApprovalsDecide:  handler(call.decideApproval).session("unknown_call", "call_answered", "approval_conflict", "invalid_input"),
	}
}

type ApprovalDecideParams struct {
	SessionID string `json:"sessionId"`
	CallID    string `json:"callId"`
	Approve   bool   `json:"approve"`
	// Reason is kept with the decision; a denial's reason is what the
	// model sees as the call's error result.
	Reason string `json:"reason,omitempty"`
}

func (s call) pendingApprovals(ctx context.Context, p SessionParams) (ToolsPendingResult, error) {
	return s.pendingCalls(ctx, p, (*core.Run).PendingApprovals)
}

func (s call) decideApproval(ctx context.Context, p ApprovalDecideParams) (RunSummary, error) {
	if err := requireSession(p.SessionID); err != nil {
		return RunSummary{}, err
	}
	if p.CallID == "" {
		return RunSummary{}, invalidParams("callId is required")
	}
	cmd := core.DecideApproval{AtMs: s.host.NowMs(), CallID: p.CallID, Approve: p.Approve, Reason: p.Reason}
	var texts staged
	if !p.Approve {
		text := deniedText(p.Reason)
		data := []byte(text)
		cmd.Result = core.EntryInput{Content: content.Ref(data, content.MediaText, ""), TokenEstimate: provider.Estimate(data), Preview: provider.Preview(text)}
		texts = staged{data}
	}
	adm, err := s.submitStaged(ctx, p.SessionID, cmd, texts)
	if err != nil {
		return RunSummary{}, err
	}
	return RunSummary{RunID: adm.RunID, Status: adm.Status}, nil
}

// deniedText is the error result the model sees for a denied call.
func deniedText(reason string) string {
	if reason = strings.TrimSpace(reason); reason == "" {
		return "The user denied this tool call."
	}
	return "The user denied this tool call: " + reason
}

// PendingApprovals calls session/approvals/pending.
func (c *Client) PendingApprovals(ctx context.Context, sessionID string) (ToolsPendingResult, error) {
	var r ToolsPendingResult
	return r, c.Call(ctx, MethodApprovalsPending, SessionParams{SessionID: sessionID}, &r)
}

// DecideApproval calls session/approvals/decide.
func (c *Client) DecideApproval(ctx context.Context, p ApprovalDecideParams) (RunSummary, error) {
	var r RunSummary
	return r, c.Call(ctx, MethodApprovalsDecide, p, &r)
}

// coreApprovals is an approvals param as the core keeps it: sorted by tool.
func coreApprovals(m map[string]string) []core.ToolApproval {
	var out []core.ToolApproval
	for _, tool := range slices.Sorted(maps.Keys(m)) {
		out = append(out, core.ToolApproval{Tool: tool, Policy: m[tool]})
	}
	return out
}

// ApprovalMap is the param form of a config's approvals.
func ApprovalMap(as []core.ToolApproval) map[string]string {
	if len(as) == 0 {
		return nil
	}
	out := make(map[string]string, len(as))
	for _, a := range as {
		out[a.Tool] = a.Policy
	}
	return out
}
