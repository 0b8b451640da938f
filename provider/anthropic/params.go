package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// ParamsVersion is the only version of the parameter object this adapter reads.
const ParamsVersion = 1

// Parameter object (the session config's providerParams for this API kind):
//
//	{"version": 1,                                   required
//	 "maxTokens": 8192,                              max_tokens, integer ≥ 1 (default DefaultMaxTokens)
//	 "temperature": 0.2,                             temperature, 0…1
//	 "topP": 0.9,                                    top_p, 0…1
//	 "topK": 40,                                     top_k, integer ≥ 1
//	 "thinking": {"type": "enabled", "budgetTokens": 2048},
//	                                                 thinking; budget ≥ 1024 and < maxTokens;
//	                                                 or {"type": "disabled"}
//	 "cacheTtl": "5m" | "1h",                        ttl of every cache marker
//	 "serviceTier": "auto" | "standard_only",        service_tier
//	 "stream": false,                                read answers whole (default: stream
//	                                                 when the endpoint does)
//	 "contextWindow": 200000,                        the window in tokens, for run admission;
//	                                                 never sent
//	 "extra": {"metadata": {"user_id": "u-1"}, …}}   request members passed verbatim
//
// Unknown members, duplicate members and wrong types are rejected. With
// thinking enabled the API refuses temperature and top_k and allows top_p
// only in 0.95…1, so those are rejected here too, at admission rather than on
// the first request. `extra` may not name a member the adapter writes
// itself: it is for fields Cairn does not model (metadata, stop_sequences,
// tool_choice, …), never for overriding the conversation or the typed fields.

// reservedExtra are the request members extra may not set, with the reason.
var reservedExtra = map[string]string{
	"model":        "the model comes from the session's model selection",
	"messages":     "messages are built from the session's context",
	"system":       "system is built from the session's instructions",
	"tools":        "tools come from the session's granted tools",
	"max_tokens":   "use maxTokens",
	"temperature":  "use temperature",
	"top_p":        "use topP",
	"top_k":        "use topK",
	"thinking":     "use thinking",
	"service_tier": "use serviceTier",
	"stream":       "use stream",
}

// minThinkingBudget is the API's lower bound on thinking.budget_tokens.
const minThinkingBudget = 1024

// ParamsError says which parameter is wrong and why. It never quotes values
// from extra, which are the user's and may be long.
type ParamsError struct {
	Field  string // JSON path inside providerParams, e.g. "thinking.budgetTokens"; "" for the object
	Reason string
}

func (e *ParamsError) Error() string {
	if e.Field == "" {
		return "anthropic: providerParams: " + e.Reason
	}
	return "anthropic: providerParams." + e.Field + ": " + e.Reason
}

// params is a validated parameter object. Numbers that go to the wire as
// written (temperature, top_p) are kept as their JSON bytes, so the request
// says exactly what the session config says.
type params struct {
	maxTokens      int64 // 0: DefaultMaxTokens
	temperature    []byte
	topP           []byte
	topK           int64
	thinking       []byte // the lowered thinking object, or nil
	thinkingBudget int64
	cacheTTL       string
	serviceTier    string
	extra          []rawjson.Member
	// uncached: place no cache markers (set by Compact, whose one-off
	// request no later request shares a prefix with). Never parsed.
	uncached bool
	// noStream: "stream": false, an answer read whole even from an
	// endpoint that streams.
	noStream bool
	// stream: ask for a stream (the endpoint streams and noStream is not
	// set). Set by Generate, never parsed.
	stream bool
}

func (p params) effectiveMaxTokens() int64 {
	if p.maxTokens == 0 {
		return DefaultMaxTokens
	}
	return p.maxTokens
}

// ValidateParams checks a session's providerParams for this API kind. Empty
// (or JSON null) means no parameters. The error is a *ParamsError.
func ValidateParams(raw json.RawMessage) error {
	_, err := parseParams(raw)
	return err
}

func parseParams(raw []byte) (params, error) {
	var p params
	raw = bytes.TrimSpace(raw)
	if rawjson.IsNull(raw) {
		return p, nil
	}
	ms, err := rawjson.ObjectMembers(raw)
	if err != nil {
		return p, &ParamsError{Reason: "must be a JSON object"}
	}
	bad := func(field, reason string) (params, error) {
		return params{}, &ParamsError{Field: field, Reason: reason}
	}
	if dup := duplicate(ms); dup != "" {
		return bad(dup, "appears more than once")
	}

	var thinkingMembers []rawjson.Member
	seenVersion, seenThinking := false, false
	for _, m := range ms {
		switch m.Name {
		case "version":
			v, ok := integer(m.Value)
			if !ok || v != ParamsVersion {
				return bad("version", fmt.Sprintf("must be %d", ParamsVersion))
			}
			seenVersion = true
		case "maxTokens":
			v, ok := integer(m.Value)
			if !ok || v < 1 || v > math.MaxInt32 {
				return bad("maxTokens", "must be an integer from 1 to 2147483647")
			}
			p.maxTokens = v
		case "temperature":
			if !numberIn(m.Value, 0, 1) {
				return bad("temperature", "must be a number from 0 to 1")
			}
			p.temperature = m.Value
		case "topP":
			if !numberIn(m.Value, 0, 1) {
				return bad("topP", "must be a number from 0 to 1")
			}
			p.topP = m.Value
		case "topK":
			v, ok := integer(m.Value)
			if !ok || v < 1 || v > math.MaxInt32 {
				return bad("topK", "must be an integer from 1 to 2147483647")
			}
			p.topK = v
		case "thinking":
			tm, err := rawjson.ObjectMembers(m.Value)
			if err != nil {
				return bad("thinking", `must be an object: {"type":"enabled","budgetTokens":N} or {"type":"disabled"}`)
			}
			thinkingMembers, seenThinking = tm, true
		case "cacheTtl":
			s, ok := rawjson.String(m.Value)
			if !ok || (s != "5m" && s != "1h") {
				return bad("cacheTtl", `must be "5m" or "1h"`)
			}
			p.cacheTTL = s
		case "serviceTier":
			s, ok := rawjson.String(m.Value)
			if !ok || (s != "auto" && s != "standard_only") {
				return bad("serviceTier", `must be "auto" or "standard_only"`)
			}
			p.serviceTier = s
		case provider.ContextWindowParam:
			if _, err := provider.ParseContextWindow(m.Value); err != nil {
				return bad(m.Name, err.Error())
			}
		case "stream":
			switch string(m.Value) {
			case "true", "false":
				p.noStream = string(m.Value) == "false"
			default:
				return bad("stream", "must be true or false")
			}
		case "extra":
			xs, err := rawjson.ObjectMembers(m.Value)
			if err != nil {
				return bad("extra", "must be an object of request members")
			}
			if dup := duplicate(xs); dup != "" {
				return bad("extra."+dup, "appears more than once")
			}
			for _, x := range xs {
				if why, reserved := reservedExtra[x.Name]; reserved {
					return bad("extra."+x.Name, "may not be set through extra: "+why)
				}
			}
			p.extra = xs
		default:
			return bad(m.Name, "unknown parameter (known: version, maxTokens, temperature, topP, topK, thinking, cacheTtl, serviceTier, stream, contextWindow, extra)")
		}
	}
	if !seenVersion {
		return bad("version", fmt.Sprintf("is required (%d)", ParamsVersion))
	}
	if seenThinking {
		if err := p.setThinking(thinkingMembers); err != nil {
			return params{}, err
		}
	}
	return p, nil
}

// setThinking validates the thinking object against the other parameters and
// keeps its lowered form.
func (p *params) setThinking(ms []rawjson.Member) error {
	bad := func(field, reason string) error { return &ParamsError{Field: "thinking" + field, Reason: reason} }
	if dup := duplicate(ms); dup != "" {
		return bad("."+dup, "appears more than once")
	}
	var kind string
	var budget []byte
	for _, m := range ms {
		switch m.Name {
		case "type":
			s, _ := rawjson.String(m.Value)
			kind = s
			if s != "enabled" && s != "disabled" {
				return bad(".type", `must be "enabled" or "disabled"`)
			}
		case "budgetTokens":
			budget = m.Value
		default:
			return bad("."+m.Name, "unknown member (known: type, budgetTokens)")
		}
	}
	switch kind {
	case "":
		return bad(".type", `is required ("enabled" or "disabled")`)
	case "disabled":
		if budget != nil {
			return bad(".budgetTokens", `is only allowed with "type": "enabled"`)
		}
		p.thinking = []byte(`{"type":"disabled"}`)
		return nil
	}
	n, ok := integer(budget)
	if !ok || n < minThinkingBudget {
		return bad(".budgetTokens", fmt.Sprintf("must be an integer of at least %d", minThinkingBudget))
	}
	if n >= p.effectiveMaxTokens() {
		return bad(".budgetTokens", fmt.Sprintf("must be less than maxTokens (%d)", p.effectiveMaxTokens()))
	}
	// The API rejects sampling changes alongside thinking; say so now.
	if p.temperature != nil {
		return &ParamsError{Field: "temperature", Reason: "cannot be set while thinking is enabled"}
	}
	if p.topK != 0 {
		return &ParamsError{Field: "topK", Reason: "cannot be set while thinking is enabled"}
	}
	if p.topP != nil && !numberIn(p.topP, 0.95, 1) {
		return &ParamsError{Field: "topP", Reason: "must be from 0.95 to 1 while thinking is enabled"}
	}
	p.thinking = []byte(`{"type":"enabled","budget_tokens":` + strconv.FormatInt(n, 10) + `}`)
	p.thinkingBudget = n
	return nil
}

// duplicate returns the first member name that appears twice, or "".
func duplicate(ms []rawjson.Member) string {
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.Name] {
			return m.Name
		}
		seen[m.Name] = true
	}
	return ""
}

// integer reads a JSON number written as an integer ("4096", not "4096.0").
func integer(v []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// numberIn reports whether v is a JSON number in [lo, hi].
func numberIn(v []byte, lo, hi float64) bool {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return false // strings, booleans, null
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return err == nil && f >= lo && f <= hi
}
