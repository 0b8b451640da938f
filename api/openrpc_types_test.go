package api

import (
	"encoding"
	"encoding/json"
	"reflect"
	"testing"
)

// A type that marshals itself has JSON its Go fields do not tell: every
// such type a method's params or result reach has its schema given in
// schemaOptions, or the document would describe fields nobody sends.
func TestOpenRPCSchemasKnowTheSelfMarshalingTypes(t *testing.T) {
	opts, err := schemaOptions()
	if err != nil {
		t.Fatal(err)
	}
	marshals := func(tp reflect.Type) bool {
		for _, x := range []reflect.Type{tp, reflect.PointerTo(tp)} {
			if x.Implements(reflect.TypeFor[json.Marshaler]()) || x.Implements(reflect.TypeFor[json.Unmarshaler]()) ||
				x.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
				return true
			}
		}
		return false
	}
	seen := map[reflect.Type]bool{}
	var walk func(from string, tp reflect.Type)
	walk = func(from string, tp reflect.Type) {
		for tp.Kind() == reflect.Pointer { // a pointer's schema is its element's, or null
			tp = tp.Elem()
		}
		if seen[tp] {
			return
		}
		seen[tp] = true
		if _, given := opts.TypeSchemas[tp]; given {
			return
		}
		if marshals(tp) {
			t.Errorf("%s reaches %s, which marshals itself: give its schema in schemaOptions", from, tp)
			return
		}
		switch tp.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map:
			walk(from, tp.Elem())
		case reflect.Struct:
			for i := range tp.NumField() {
				walk(from, tp.Field(i).Type)
			}
		}
	}
	for name, m := range routes() {
		walk(name, m.params)
		walk(name, m.result)
	}
}
