package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
)

func TestValidateParamsAccepts(t *testing.T) {
	for _, raw := range []string{
		``,
		`null`,
		`{"version":1}`,
		`{"version":1,"temperature":0,"topP":1,"maxOutputTokens":16}`,
		`{"version":1,"temperature":2,"topP":0.05,"maxOutputTokens":1e5}`,
		`{"version":1,"reasoning":{"effort":"minimal"}}`,
		`{"version":1,"reasoning":{"summary":"detailed","effort":"xhigh"}}`,
		`{"version":1,"serviceTier":"priority","store":true,"parallelToolCalls":false}`,
		`{"version":1,"include":[]}`,
		`{"version":1,"include":["reasoning.encrypted_content","web_search_call.action.sources"]}`,
		`{"version":1,"extra":{}}`,
		`{"version":1,"extra":{"truncation":"auto","metadata":{"k":"v"},"text":{"verbosity":"low"},"context_management":[{"type":"compaction","compact_threshold":200000}]}}`,
		`{"version":1,"temperature":null,"reasoning":{"effort":null},"extra":null}`,
		` {"version": 1.0} `,
	} {
		if err := ValidateParams(json.RawMessage(raw)); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

func TestValidateParamsRejects(t *testing.T) {
	cases := []struct{ raw, field, reason string }{
		{`[]`, "", "must be a JSON object"},
		{`{"version":1,`, "", "must be a JSON object"},
		{`{}`, "version", "is required"},
		{`{"temperature":0.5}`, "version", "is required"},
		{`{"version":2}`, "version", "must be 1"},
		{`{"version":"1"}`, "version", "must be 1"},
		{`{"version":null}`, "version", "must be 1"},
		{`{"version":1,"Temperature":0.5}`, "Temperature", "unknown field"},
		{`{"version":1,"top_p":0.5}`, "top_p", "unknown field"},
		{`{"version":1,"cacheTTL":"1h"}`, "cacheTTL", "unknown field"},
		{`{"version":1,"temperature":"0.5"}`, "temperature", "must be a number"},
		{`{"version":1,"temperature":2.5}`, "temperature", "must be between 0 and 2"},
		{`{"version":1,"temperature":-0.1}`, "temperature", "must be between 0 and 2"},
		{`{"version":1,"topP":1.5}`, "topP", "must be between 0 and 1"},
		{`{"version":1,"topP":true}`, "topP", "must be a number"},
		{`{"version":1,"maxOutputTokens":0}`, "maxOutputTokens", "must be a positive integer"},
		{`{"version":1,"maxOutputTokens":12.5}`, "maxOutputTokens", "must be a positive integer"},
		{`{"version":1,"maxOutputTokens":"100"}`, "maxOutputTokens", "must be a positive integer"},
		{`{"version":1,"reasoning":"high"}`, "reasoning", "must be an object"},
		{`{"version":1,"reasoning":{"effort":"hihg"}}`, "reasoning.effort", `must be one of "none"`},
		{`{"version":1,"reasoning":{"effort":3}}`, "reasoning.effort", "must be one of"},
		{`{"version":1,"reasoning":{"summary":"short"}}`, "reasoning.summary", "must be one of"},
		{`{"version":1,"reasoning":{"budget":1024}}`, "reasoning.budget", "unknown field"},
		{`{"version":1,"reasoning":{"effort":"low","effort":"high"}}`, "reasoning.effort", "appears twice"},
		{`{"version":1,"serviceTier":"turbo"}`, "serviceTier", "must be one of"},
		{`{"version":1,"store":"false"}`, "store", "must be true or false"},
		{`{"version":1,"parallelToolCalls":1}`, "parallelToolCalls", "must be true or false"},
		{`{"version":1,"include":"reasoning.encrypted_content"}`, "include", "must be an array of strings"},
		{`{"version":1,"include":[""]}`, "include[0]", "non-empty string"},
		{`{"version":1,"include":["a",1]}`, "include[1]", "non-empty string"},
		{`{"version":1,"include":["a","a"]}`, "include[1]", "repeats"},
		{`{"version":1,"extra":[]}`, "extra", "must be an object"},
		{`{"version":1,"extra":{"model":"gpt-4"}}`, "extra.model", "session's model selection"},
		{`{"version":1,"extra":{"input":[]}}`, "extra.input", "context"},
		{`{"version":1,"extra":{"instructions":"x"}}`, "extra.instructions", "instruction entries"},
		{`{"version":1,"extra":{"tools":[]}}`, "extra.tools", "granted tools"},
		{`{"version":1,"extra":{"stream":true}}`, "extra.stream", "typed field stream"},
		{`{"version":1,"stream":"yes"}`, "stream", "true or false"},
		{`{"version":1,"extra":{"temperature":1}}`, "extra.temperature", "typed field temperature"},
		{`{"version":1,"extra":{"a":1,"a":2}}`, "extra.a", "appears twice"},
		{`{"version":1,"version":1}`, "version", "appears twice"},
	}
	for _, c := range cases {
		err := ValidateParams(json.RawMessage(c.raw))
		var pe *ParamsError
		if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%s: want *ParamsError, got %v", c.raw, err)
			continue
		}
		if pe.Field != c.field || !strings.Contains(pe.Reason, c.reason) {
			t.Errorf("%s: got field %q reason %q, want %q ~ %q", c.raw, pe.Field, pe.Reason, c.field, c.reason)
		}
		if !strings.HasPrefix(err.Error(), "responses: providerParams") {
			t.Errorf("%s: message %q", c.raw, err)
		}
	}
}

func TestEveryReservedExtraFieldIsRejected(t *testing.T) {
	for name := range reservedExtra {
		raw := `{"version":1,"extra":{"` + name + `":"sk-live-SECRETVALUE"}}`
		err := ValidateParams(json.RawMessage(raw))
		var pe *ParamsError
		if !errors.As(err, &pe) || pe.Field != "extra."+name {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if strings.Contains(err.Error(), "SECRETVALUE") {
			t.Errorf("%s: error quotes the value", name)
		}
	}
}

func TestParamsInCanonicalFormLowerDeterministically(t *testing.T) {
	// The core hands params over canonicalised (sorted keys); the request
	// must not depend on anything else.
	raw := []byte(`{ "version": 1, "extra": {"truncation":"auto", "metadata": {"b":"2","a":"1"}}, "temperature": 0.70 }`)
	c, err := content.Canonical(raw)
	if err != nil {
		t.Fatal(err)
	}
	b := newCtx(t)
	b.user("hi")
	req := request(b)
	req.Tools = nil
	req.Params = c
	body := lower(t, b, req, LowerOptions{})
	want := `{"model":"gpt-5","input":[{"role":"user","content":"hi"}],"include":["reasoning.encrypted_content"],"store":false,` +
		`"prompt_cache_key":"sess-01","temperature":0.70,"metadata":{"a":"1","b":"2"},"truncation":"auto"}`
	if string(body) != want {
		t.Fatalf("got  %s\nwant %s", body, want)
	}
	// An explicit empty include sends none; store:true is sent as asked.
	req.Params = json.RawMessage(`{"include":[],"store":true,"version":1}`)
	body = lower(t, b, req, LowerOptions{})
	if bytes.Contains(body, []byte(`"include"`)) || !bytes.Contains(body, []byte(`"store":true`)) {
		t.Fatalf("got %s", body)
	}
}

func TestLowerRejectsInvalidParams(t *testing.T) {
	b := newCtx(t)
	b.user("hi")
	req := request(b)
	req.Params = json.RawMessage(`{"version":1,"temprature":0.5}`)
	_, err := Lower(context.Background(), b.blobs, req, LowerOptions{})
	var pe *ParamsError
	if !errors.As(err, &pe) || pe.Field != "temprature" {
		t.Fatalf("got %v", err)
	}
	if err := New(nil, nil).ValidateParams(req.Params); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("method: %v", err)
	}
}
