package api

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/cairn-agents/cairn/content"
)

// decodeParams decodes params strictly: member names match the API's field
// names exactly (encoding/json would take "SESSIONID" for "sessionId"), a
// member named twice or unknown is an error (a typo in a client is caught,
// not silently ignored), and errors speak of the API's fields, never of Go
// types.
func decodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := jsonv2.Unmarshal(raw, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return invalidParams(decodeMessage("params", err))
	}
	return nil
}

// paramKinder is implemented by param types with their own JSON forms, to
// say what they accept ("a digest string or a ref object").
type paramKinder interface{ paramKind() string }

// decodeMessage describes a decoding error of the value at root in the
// API's words: where (input[0].ref) and what was expected there.
func decodeMessage(root string, err error) string {
	var se *jsonv2.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.As(err, &syn) && syn.Err == jsontext.ErrDuplicateName:
		return "field " + strconv.Quote(syn.JSONPointer.LastToken()) + " appears twice" + in(root, syn.JSONPointer.Parent())
	case errors.As(err, &syn):
		return "invalid JSON" + in(root, syn.JSONPointer)
	case errors.As(err, &se) && errors.Is(se.Err, jsonv2.ErrUnknownName):
		return "unknown field " + strconv.Quote(se.JSONPointer.LastToken()) + in(root, se.JSONPointer.Parent())
	case errors.As(err, &se):
		msg := fieldPath(root, se.JSONPointer) + ": expected " + describe(se.GoType)
		// A param type's own refusal (an invalid digest) says what is wrong
		// with the value; the decoder's own errors add nothing a client needs.
		var own *paramError
		if errors.As(se.Err, &own) {
			msg = fieldPath(root, se.JSONPointer) + ": " + own.msg
		}
		return msg
	}
	return root + ": " + err.Error()
}

// paramError is a refusal by a param type's own decoder, worded for clients.
type paramError struct{ msg string }

func (e *paramError) Error() string { return e.msg }

func in(root string, p jsontext.Pointer) string {
	if p == "" {
		return " of " + root
	}
	return " in " + fieldPath(root, p)
}

// fieldPath spells a JSON pointer the way the API names fields:
// /input/0/ref is input[0].ref; the empty pointer is root itself.
func fieldPath(root string, p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	if b.Len() == 0 {
		return root
	}
	return b.String()
}

var (
	bytesType  = reflect.TypeFor[[]byte]()
	digestType = reflect.TypeFor[content.Digest]()
	rawType    = reflect.TypeFor[json.RawMessage]()
	kinder     = reflect.TypeFor[paramKinder]()
	texter     = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()
)

// describe says in JSON terms what a Go type accepts.
func describe(t reflect.Type) string {
	if t == nil {
		return "a valid value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case reflect.PointerTo(t).Implements(kinder):
		return reflect.New(t).Interface().(paramKinder).paramKind()
	case t == digestType:
		return "a digest string (sha256: and 64 lowercase hex digits)"
	case t == bytesType:
		return "base64 data"
	case t == rawType:
		return "a JSON value"
	case reflect.PointerTo(t).Implements(texter):
		return "a string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a valid value"
}
