package caps

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/aiodhq/aiod/sdk/jsonx"
)

// The flat path of StrictUnmarshal. A host function's request (a process
// start, a read, a wait) is decoded on every call: the token walk that
// checks its names cost several times the decoding itself (17 µs for a
// start request against a few for json.Unmarshal). For a struct whose
// fields hold no struct (scalars, pointers to them, slices of them, maps
// of them, raw JSON), the names that can break the rules are the
// top-level members' and the keys of the objects decoded into maps: they
// are checked in one pass over the document's members (jsonx.Walk), then
// json.Unmarshal decodes it. A document the flat path does not accept
// (a name to refuse, one spelled with escapes, an error of any kind)
// goes the general way, which says what is wrong: the flat path only
// ever answers yes, and only where the general way would (FuzzStrictFlat
// holds the two to the same values).

// flatShape is what the flat path needs of a struct type: its fields by
// JSON name, and which of them decode into a map (whose keys are checked
// too). nil: the type is not flat.
type flatShape struct {
	fields map[string]bool // JSON name -> decodes into a map
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

var flatShapes sync.Map // reflect.Type -> *flatShape (nil when not flat)

// shapeOf is t's flat shape (nil when t is not a flat struct).
func shapeOf(t reflect.Type) *flatShape {
	if s, ok := flatShapes.Load(t); ok {
		return s.(*flatShape)
	}
	var s *flatShape
	if t.Kind() == reflect.Struct && !t.Implements(unmarshalerType) && !reflect.PointerTo(t).Implements(unmarshalerType) {
		s = &flatShape{fields: map[string]bool{}}
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous || tag == "-" && f.IsExported() {
				s = nil // promotion, and "-" (a field named "-" is "-,")
				break
			}
			if !f.IsExported() {
				continue
			}
			name := tag
			if name == "" {
				name = f.Name
			}
			isMap, ok := flatField(f.Type)
			if !ok {
				s = nil
				break
			}
			if _, dup := s.fields[name]; dup {
				s = nil // two fields of one name: encoding/json's rules
				break
			}
			s.fields[name] = isMap
		}
	}
	flatShapes.Store(t, s)
	return s
}

// flatField reports whether a field of type t holds no struct (and
// whether it decodes into a map with string keys).
func flatField(t reflect.Type) (isMap, ok bool) {
	if t == rawMessageType {
		return false, true
	}
	switch t.Kind() {
	case reflect.Pointer:
		return false, scalarKind(t.Elem())
	case reflect.Slice, reflect.Array:
		return false, t.Elem() == rawMessageType || scalarKind(t.Elem())
	case reflect.Map:
		return true, t.Key().Kind() == reflect.String && scalarKind(t.Elem())
	}
	return false, scalarKind(t)
}

func scalarKind(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return t.Name() == t.Kind().String() // not a type with methods of its own (an Unmarshaler)
	}
	return false
}

// strictFlat decodes data into v (a pointer to a flat struct) when its
// names are as StrictUnmarshal allows; false when v is not flat or data
// needs the general way.
func strictFlat(data []byte, v any) bool {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return false
	}
	s := shapeOf(t.Elem())
	if s == nil {
		return false
	}
	var seen [16]string // the names met so far (a request has few)
	n, ok := 0, true
	err := jsonx.Walk(data, func(m jsonx.Member) bool {
		isMap, known := s.fields[m.Key]
		if !known || !plainKey(data, m) || n == len(seen) {
			ok = false
			return false
		}
		for _, k := range seen[:n] {
			if k == m.Key {
				ok = false
				return false
			}
		}
		seen[n] = m.Key
		n++
		if isMap && data[m.Value] == '{' && !uniqueKeys(data[m.Value:m.End]) {
			ok = false
			return false
		}
		return true
	})
	if err != nil || !ok {
		return false
	}
	return json.Unmarshal(data, v) == nil
}

// plainKey reports whether m's key is written without escapes (its bytes
// are the name).
func plainKey(data []byte, m jsonx.Member) bool {
	end := m.Start + 1 + len(m.Key)
	return end < len(data) && data[end] == '"' && string(data[m.Start+1:end]) == m.Key
}

// uniqueKeys reports whether the object obj's keys are written without
// escapes, in valid UTF-8 (encoding/json reads each invalid byte as
// U+FFFD: two keys that differ there are one), and each once.
func uniqueKeys(obj []byte) bool {
	var keys map[string]bool
	ok := true
	err := jsonx.Walk(obj, func(m jsonx.Member) bool {
		if !plainKey(obj, m) || !utf8.ValidString(m.Key) || keys[m.Key] {
			ok = false
			return false
		}
		if keys == nil {
			keys = map[string]bool{}
		}
		keys[string([]byte(m.Key))] = true
		return true
	})
	return err == nil && ok
}
