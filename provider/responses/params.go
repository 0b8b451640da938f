package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// ParamsVersion is the version of the provider parameter object this adapter
// reads. A later, incompatible shape gets a new number, so a stored session
// config never silently changes meaning.
const ParamsVersion = 1

// ErrInvalidParams is matched by *ParamsError.
var ErrInvalidParams = errors.New("invalid provider parameters")

// ParamsError says which parameter is wrong and why. It quotes names, never
// values: an extra field may hold anything, including a secret.
type ParamsError struct {
	Field  string // e.g. "temperature", "reasoning.effort", "extra.model"; "" for the object itself
	Reason string
}

func (e *ParamsError) Error() string {
	if e.Field == "" {
		return "responses: providerParams: " + e.Reason
	}
	return "responses: providerParams." + e.Field + ": " + e.Reason
}
func (e *ParamsError) Unwrap() error { return ErrInvalidParams }

// Allowed values. They follow the OpenAI API reference; a value added there
// later needs adding here, which is the price of rejecting typos at admission
// instead of at the first provider call.
var (
	reasoningEfforts  = []string{"none", "minimal", "low", "medium", "high", "xhigh"}
	reasoningSummarys = []string{"auto", "concise", "detailed"}
	serviceTiers      = []string{"auto", "default", "flex", "scale", "priority"}
)

// defaultInclude asks for reasoning items' encrypted_content: with store:
// false the provider keeps nothing, so a reasoning item can only be re-sent
// if it carries its encrypted state.
var defaultInclude = []string{"reasoning.encrypted_content"}

// reservedExtra are request fields `extra` may not set, with the reason.
var reservedExtra = map[string]string{
	"model":                "set by the session's model selection",
	"input":                "built from the session's context",
	"instructions":         "built from the session's instruction entries",
	"tools":                "built from the session's granted tools",
	"prompt_cache_key":     "derived from the session id",
	"stream":               "use the typed field stream",
	"stream_options":       "the adapter asks for what it reads",
	"background":           "the adapter reads one completed response, not a queued one",
	"previous_response_id": "the adapter sends the whole context on every request",
	"conversation":         "the adapter sends the whole context on every request",
	"temperature":          "use the typed field temperature",
	"top_p":                "use the typed field topP",
	"max_output_tokens":    "use the typed field maxOutputTokens",
	"reasoning":            "use the typed field reasoning",
	"service_tier":         "use the typed field serviceTier",
	"store":                "use the typed field store",
	"parallel_tool_calls":  "use the typed field parallelToolCalls",
	"include":              "use the typed field include",
}

// params is a validated parameter object, ready to lower. Numbers keep the
// bytes they were written with (the core hands them over in canonical form),
// so the same config always gives the same request bytes.
type params struct {
	temperature       []byte
	topP              []byte
	maxOutputTokens   int64 // 0: unset
	reasoningEffort   string
	reasoningSummary  string
	serviceTier       string
	store             bool
	parallelToolCalls *bool
	include           []string // nil: defaultInclude
	extra             []rawjson.Member
	noStream          bool // "stream": false
}

// ValidateParams checks a session's provider parameters for openai_responses.
// Empty (or JSON null) means all defaults. Otherwise raw must be the object
//
//	{"version":1,                         required
//	 "temperature":      number 0..2,
//	 "topP":             number 0..1,
//	 "maxOutputTokens":  integer ≥ 1,
//	 "reasoning":        {"effort": "none"|"minimal"|"low"|"medium"|"high"|"xhigh",
//	                      "summary": "auto"|"concise"|"detailed"},
//	 "serviceTier":      "auto"|"default"|"flex"|"scale"|"priority",
//	 "store":            bool (default false),
//	 "parallelToolCalls": bool,
//	 "include":          [string] (replaces the default ["reasoning.encrypted_content"]),
//	 "stream":           bool (false: read answers whole; default: stream when the endpoint does),
//	 "contextWindow":    integer ≥ 1 (the model's window in tokens, for run admission; never sent),
//	 "extra":            {request fields merged into the body verbatim}}
//
// Every field but version is optional, and null means unset. Unknown fields
// (names match exactly, case included), wrong types and out-of-range values
// are rejected with a *ParamsError. `extra` may not set a field the adapter
// builds from the session or that has a typed field here. It may set
// context_management, which stays as it was before compaction policies
// existed; when the session's compaction policy has mode provider_triggered,
// the policy's context_management is sent instead of extra's.
func ValidateParams(raw json.RawMessage) error {
	_, err := parseParams(raw)
	return err
}

func parseParams(raw []byte) (params, error) {
	p := params{}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return p, nil
	}
	ms, err := rawjson.ObjectMembers(raw)
	if err != nil {
		return p, &ParamsError{Reason: "must be a JSON object"}
	}
	if err := noDuplicates(ms, ""); err != nil {
		return p, err
	}
	version := false
	for _, m := range ms {
		if rawjson.IsNull(m.Value) && m.Name != "version" {
			continue
		}
		switch m.Name {
		case "version":
			f, ok := number(m.Value)
			if !ok || f != ParamsVersion {
				return p, &ParamsError{Field: "version", Reason: fmt.Sprintf("must be %d", ParamsVersion)}
			}
			version = true
		case "temperature":
			if err := numberIn(m.Value, "temperature", 0, 2); err != nil {
				return p, err
			}
			p.temperature = m.Value
		case "topP":
			if err := numberIn(m.Value, "topP", 0, 1); err != nil {
				return p, err
			}
			p.topP = m.Value
		case "maxOutputTokens":
			f, ok := number(m.Value)
			if !ok || f < 1 || f != math.Trunc(f) || f > 1<<53 {
				return p, &ParamsError{Field: "maxOutputTokens", Reason: "must be a positive integer"}
			}
			p.maxOutputTokens = int64(f)
		case "reasoning":
			if err := p.parseReasoning(m.Value); err != nil {
				return p, err
			}
		case "serviceTier":
			s, err := oneOf(m.Value, "serviceTier", serviceTiers)
			if err != nil {
				return p, err
			}
			p.serviceTier = s
		case "store":
			b, err := boolean(m.Value, "store")
			if err != nil {
				return p, err
			}
			p.store = b
		case provider.ContextWindowParam:
			if _, err := provider.ParseContextWindow(m.Value); err != nil {
				return p, &ParamsError{Field: m.Name, Reason: err.Error()}
			}
		case "stream":
			b, err := boolean(m.Value, "stream")
			if err != nil {
				return p, err
			}
			p.noStream = !b
		case "parallelToolCalls":
			b, err := boolean(m.Value, "parallelToolCalls")
			if err != nil {
				return p, err
			}
			p.parallelToolCalls = &b
		case "include":
			inc, err := parseInclude(m.Value)
			if err != nil {
				return p, err
			}
			p.include = inc
		case "extra":
			extra, err := parseExtra(m.Value)
			if err != nil {
				return p, err
			}
			p.extra = extra
		default:
			return p, &ParamsError{Field: m.Name, Reason: "unknown field (known: version, temperature, topP, maxOutputTokens, reasoning, serviceTier, store, parallelToolCalls, include, stream, contextWindow, extra)"}
		}
	}
	if !version {
		return p, &ParamsError{Field: "version", Reason: fmt.Sprintf("is required (this adapter reads version %d)", ParamsVersion)}
	}
	return p, nil
}

func (p *params) parseReasoning(v []byte) error {
	ms, err := rawjson.ObjectMembers(v)
	if err != nil {
		return &ParamsError{Field: "reasoning", Reason: "must be an object"}
	}
	if err := noDuplicates(ms, "reasoning."); err != nil {
		return err
	}
	for _, m := range ms {
		if rawjson.IsNull(m.Value) {
			continue
		}
		switch m.Name {
		case "effort":
			if p.reasoningEffort, err = oneOf(m.Value, "reasoning.effort", reasoningEfforts); err != nil {
				return err
			}
		case "summary":
			if p.reasoningSummary, err = oneOf(m.Value, "reasoning.summary", reasoningSummarys); err != nil {
				return err
			}
		default:
			return &ParamsError{Field: "reasoning." + m.Name, Reason: "unknown field (known: effort, summary)"}
		}
	}
	return nil
}

func parseInclude(v []byte) ([]string, error) {
	els, err := rawjson.ArrayElements(v)
	if err != nil {
		return nil, &ParamsError{Field: "include", Reason: "must be an array of strings"}
	}
	out := []string{} // non-nil: an explicit empty list sends no include
	for i, el := range els {
		s, ok := rawjson.String(el)
		if !ok || s == "" {
			return nil, &ParamsError{Field: fmt.Sprintf("include[%d]", i), Reason: "must be a non-empty string"}
		}
		for _, prev := range out {
			if prev == s {
				return nil, &ParamsError{Field: fmt.Sprintf("include[%d]", i), Reason: "repeats an earlier value"}
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func parseExtra(v []byte) ([]rawjson.Member, error) {
	ms, err := rawjson.ObjectMembers(v)
	if err != nil {
		return nil, &ParamsError{Field: "extra", Reason: "must be an object"}
	}
	if err := noDuplicates(ms, "extra."); err != nil {
		return nil, err
	}
	for _, m := range ms {
		if why, ok := reservedExtra[m.Name]; ok {
			return nil, &ParamsError{Field: "extra." + m.Name, Reason: "may not be set through extra: " + why}
		}
	}
	return ms, nil
}

// noDuplicates rejects an object that names a member twice: encoding/json
// would silently take the last, which is not what a config author meant.
func noDuplicates(ms []rawjson.Member, prefix string) error {
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.Name] {
			return &ParamsError{Field: prefix + m.Name, Reason: "appears twice"}
		}
		seen[m.Name] = true
	}
	return nil
}

// number parses a JSON number literal (a string holding digits is not one).
func number(v []byte) (float64, bool) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

func numberIn(v []byte, field string, lo, hi float64) error {
	f, ok := number(v)
	if !ok {
		return &ParamsError{Field: field, Reason: "must be a number"}
	}
	if f < lo || f > hi {
		return &ParamsError{Field: field, Reason: fmt.Sprintf("must be between %g and %g", lo, hi)}
	}
	return nil
}

func boolean(v []byte, field string) (bool, error) {
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, &ParamsError{Field: field, Reason: "must be true or false"}
}

func oneOf(v []byte, field string, allowed []string) (string, error) {
	s, ok := rawjson.String(v)
	if ok {
		for _, a := range allowed {
			if s == a {
				return s, nil
			}
		}
	}
	return "", &ParamsError{Field: field, Reason: "must be one of " + quoteAll(allowed)}
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
