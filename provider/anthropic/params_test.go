package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestValidateParamsAccepts(t *testing.T) {
	for _, raw := range []string{
		``, `null`, `{"version":1}`,
		`{"version":1,"maxTokens":1,"temperature":0,"topP":1,"topK":40,"cacheTtl":"5m","serviceTier":"auto"}`,
		`{"version":1,"temperature":1.0,"topP":0.0}`,
		`{"version":1,"thinking":{"type":"enabled","budgetTokens":1024}}`,
		`{"version":1,"maxTokens":16000,"thinking":{"budgetTokens":10000,"type":"enabled"},"topP":0.95,"cacheTtl":"1h"}`,
		`{"version":1,"thinking":{"type":"disabled"},"temperature":0.3}`,
		`{"version":1,"serviceTier":"standard_only","extra":{"metadata":{"user_id":"u"},"stop_sequences":["\n\nHuman:"],"tool_choice":{"type":"auto"}}}`,
	} {
		if err := ValidateParams(json.RawMessage(raw)); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

func TestValidateParamsRejects(t *testing.T) {
	cases := []struct{ raw, field, says string }{
		{`[]`, "", "object"},
		{`{"maxTokens":10}`, "version", "required"},
		{`{"version":2}`, "version", "must be 1"},
		{`{"version":"1"}`, "version", "must be 1"},
		{`{"version":1,"version":1}`, "version", "more than once"},
		{`{"version":1,"max_tokens":10}`, "max_tokens", "unknown parameter"},
		{`{"version":1,"reasoningEffort":"high"}`, "reasoningEffort", "unknown parameter"},
		{`{"version":1,"maxTokens":0}`, "maxTokens", "integer"},
		{`{"version":1,"maxTokens":10.5}`, "maxTokens", "integer"},
		{`{"version":1,"maxTokens":"4096"}`, "maxTokens", "integer"},
		{`{"version":1,"temperature":1.5}`, "temperature", "0 to 1"},
		{`{"version":1,"temperature":"hot"}`, "temperature", "0 to 1"},
		{`{"version":1,"temperature":null}`, "temperature", "0 to 1"},
		{`{"version":1,"topP":-0.1}`, "topP", "0 to 1"},
		{`{"version":1,"topK":0}`, "topK", "integer"},
		{`{"version":1,"cacheTtl":"10m"}`, "cacheTtl", `"5m" or "1h"`},
		{`{"version":1,"cacheTtl":300}`, "cacheTtl", `"5m" or "1h"`},
		{`{"version":1,"serviceTier":"priority"}`, "serviceTier", "auto"},
		{`{"version":1,"thinking":true}`, "thinking", "object"},
		{`{"version":1,"thinking":{}}`, "thinking.type", "required"},
		{`{"version":1,"thinking":{"type":"on"}}`, "thinking.type", "enabled"},
		{`{"version":1,"thinking":{"type":"enabled"}}`, "thinking.budgetTokens", "at least 1024"},
		{`{"version":1,"thinking":{"type":"enabled","budgetTokens":512}}`, "thinking.budgetTokens", "at least 1024"},
		{`{"version":1,"thinking":{"type":"enabled","budgetTokens":4096}}`, "thinking.budgetTokens", "less than maxTokens (4096)"},
		{`{"version":1,"thinking":{"type":"enabled","budgetTokens":2048,"effort":"high"}}`, "thinking.effort", "unknown"},
		{`{"version":1,"thinking":{"type":"disabled","budgetTokens":2048}}`, "thinking.budgetTokens", "only allowed"},
		{`{"version":1,"thinking":{"type":"enabled","budgetTokens":2048},"temperature":0.5}`, "temperature", "thinking"},
		{`{"version":1,"thinking":{"type":"enabled","budgetTokens":2048},"topK":5}`, "topK", "thinking"},
		{`{"version":1,"thinking":{"type":"enabled","budgetTokens":2048},"topP":0.5}`, "topP", "0.95"},
		{`{"version":1,"extra":[]}`, "extra", "object"},
		{`{"version":1,"extra":{"model":"claude-opus"}}`, "extra.model", "model selection"},
		{`{"version":1,"extra":{"messages":[]}}`, "extra.messages", "context"},
		{`{"version":1,"extra":{"system":"be evil"}}`, "extra.system", "instructions"},
		{`{"version":1,"extra":{"tools":[]}}`, "extra.tools", "granted tools"},
		{`{"version":1,"extra":{"max_tokens":5}}`, "extra.max_tokens", "use maxTokens"},
		{`{"version":1,"extra":{"stream":true}}`, "extra.stream", "use stream"},
		{`{"version":1,"stream":"no"}`, "stream", "true or false"},
		{`{"version":1,"extra":{"a":1,"a":2}}`, "extra.a", "more than once"},
	}
	for _, c := range cases {
		err := ValidateParams(json.RawMessage(c.raw))
		var pe *ParamsError
		if !errors.As(err, &pe) {
			t.Errorf("%s: want *ParamsError, got %v", c.raw, err)
			continue
		}
		if pe.Field != c.field || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: got field %q: %v", c.raw, pe.Field, err)
		}
	}
}

func TestParamsLowering(t *testing.T) {
	b := newCtx(t)
	b.user("q")
	req := b.request()
	req.Tools = nil
	req.Params = json.RawMessage(`{"extra":{"metadata":{"user_id":"u-1"},"stop_sequences":["END"]},"maxTokens":2000,"serviceTier":"auto","temperature":0.25,"topK":40,"topP":0.9,"version":1}`)
	body, err := Lower(context.Background(), b.blobs, req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-sonnet-4-5","max_tokens":2000,"temperature":0.25,"top_p":0.9,"top_k":40,"service_tier":"auto","metadata":{"user_id":"u-1"},"stop_sequences":["END"],"messages":[`
	if !bytes.HasPrefix(body, []byte(want)) {
		t.Fatalf("got %s", body)
	}

	req.Params = json.RawMessage(`{"maxTokens":16000,"thinking":{"budgetTokens":10000,"type":"enabled"},"version":1}`)
	body, _ = Lower(context.Background(), b.blobs, req)
	if !bytes.HasPrefix(body, []byte(`{"model":"claude-sonnet-4-5","max_tokens":16000,"thinking":{"type":"enabled","budget_tokens":10000},"messages":[`)) {
		t.Fatalf("got %s", body)
	}

	req.Params = json.RawMessage(`{"thinking":{"type":"disabled"},"version":1}`)
	body, _ = Lower(context.Background(), b.blobs, req)
	if !bytes.Contains(body, []byte(`"max_tokens":4096,"thinking":{"type":"disabled"},"messages"`)) {
		t.Fatalf("got %s", body)
	}
}
