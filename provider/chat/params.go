package chat

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/rawjson"
)

// ParamsVersion is the only version of the parameter object this adapter reads.
const ParamsVersion = 1

// Parameter object (the session config's providerParams for this API kind):
//
//	{"version": 1,             required
//	 "stream": false,          read answers whole (default: stream when the endpoint does)
//	 "contextWindow": 32768}   the model's window in tokens, for run admission; never sent
//
// Unknown members, duplicates and wrong types are rejected.

// ParamsError says which parameter is wrong and why.
type ParamsError struct {
	Field  string // "" for the object
	Reason string
}

func (e *ParamsError) Error() string {
	if e.Field == "" {
		return "chat: providerParams: " + e.Reason
	}
	return "chat: providerParams." + e.Field + ": " + e.Reason
}

type params struct {
	noStream bool
}

// ValidateParams checks a session's provider parameters for chat_completions.
func ValidateParams(raw json.RawMessage) error {
	_, err := parseParams(raw)
	return err
}

// ValidateParams makes the adapter a provider.ParamsValidator.
func (a *Adapter) ValidateParams(raw json.RawMessage) error { return ValidateParams(raw) }

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
	seen := map[string]bool{}
	version := false
	for _, m := range ms {
		if seen[m.Name] {
			return params{}, &ParamsError{Field: m.Name, Reason: "appears more than once"}
		}
		seen[m.Name] = true
		switch m.Name {
		case "version":
			if string(m.Value) != fmt.Sprint(ParamsVersion) {
				return params{}, &ParamsError{Field: "version", Reason: fmt.Sprintf("must be %d", ParamsVersion)}
			}
			version = true
		case "stream":
			switch string(m.Value) {
			case "true", "false":
				p.noStream = string(m.Value) == "false"
			default:
				return params{}, &ParamsError{Field: "stream", Reason: "must be true or false"}
			}
		case provider.ContextWindowParam:
			if _, err := provider.ParseContextWindow(m.Value); err != nil {
				return params{}, &ParamsError{Field: m.Name, Reason: err.Error()}
			}
		default:
			return params{}, &ParamsError{Field: m.Name, Reason: "unknown parameter (known: version, stream, contextWindow)"}
		}
	}
	if !version {
		return params{}, &ParamsError{Field: "version", Reason: fmt.Sprintf("is required (%d)", ParamsVersion)}
	}
	return p, nil
}
