package content

import (
	"reflect"
	"slices"
)

// RefHolder is implemented by a value whose format names a blob in a field
// that is not a ContentRef or a Digest (a link's snapshot digest string, say):
// it declares those refs itself.
type RefHolder interface {
	HeldRefs() []Digest
}

var (
	refType       = reflect.TypeFor[ContentRef]()
	digestType    = reflect.TypeFor[Digest]()
	refHolderType = reflect.TypeFor[RefHolder]()
)

// RefsOf returns the blobs that v refers to through its typed fields: every
// non-zero ContentRef and Digest reachable from it, and whatever a RefHolder
// declares, sorted and without duplicates. Strings are never read: text that
// happens to look like a digest is text, and creates no reference.
func RefsOf(v any) []Digest {
	var out []Digest
	walkRefs(reflect.ValueOf(v), &out)
	SortDigests(out)
	return slices.Compact(out)
}

func walkRefs(v reflect.Value, out *[]Digest) {
	if !v.IsValid() {
		return
	}
	t := v.Type()
	if t.Implements(refHolderType) && (t.Kind() != reflect.Pointer || !v.IsNil()) {
		*out = append(*out, v.Interface().(RefHolder).HeldRefs()...)
	}
	switch {
	case t == refType:
		if d := v.Interface().(ContentRef).Digest; !d.IsZero() {
			*out = append(*out, d)
		}
		return
	case t == digestType:
		if d := v.Interface().(Digest); !d.IsZero() {
			*out = append(*out, d)
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkRefs(v.Elem(), out)
		}
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				walkRefs(v.Field(i), out)
			}
		}
	case reflect.Slice, reflect.Array:
		if scalar(t.Elem()) {
			return // bytes, strings, numbers: no typed ref inside
		}
		for i := range v.Len() {
			walkRefs(v.Index(i), out)
		}
	case reflect.Map:
		// Keys and values both; the result is sorted, so map order never shows.
		for it := v.MapRange(); it.Next(); {
			walkRefs(it.Key(), out)
			walkRefs(it.Value(), out)
		}
	}
}

// scalar reports whether values of t can hold no typed ref.
func scalar(t reflect.Type) bool {
	if t.Implements(refHolderType) {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}
