// Package infer writes the JSON Schema of a Go type: the input schema the
// SDK declares for a tool whose handler takes that type and whose Tool
// gives none.
//
// It gives the schema github.com/google/jsonschema-go's For gives with no
// options, byte for byte (infer_test.go compares the two on a table of
// types), without linking that package into every plugin: its imports
// (regexp, math/big, log/slog, its validator) were 28% of the example echo
// module (4.9 against 3.6 MB), which every start of every instance and
// every compile paid for (RATIONALE.md, "The Go SDK infers schemas
// itself").
package infer

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// For returns t's schema, or why t has none (a cycle, a map whose keys are
// not strings, a func, chan, complex or unsafe.Pointer anywhere in it, an
// empty or reserved jsonschema tag).
func For(t reflect.Type) (json.RawMessage, error) {
	s, err := forType(t, map[reflect.Type]bool{})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	s.write(&b)
	return b.Bytes(), nil
}

// schema holds the keywords inference sets.
type schema struct {
	typ         string   // one type
	types       []string // or several ("null" first)
	props       []prop   // an object's properties, in order (nil: none)
	items       *schema
	description string
	min, max    *float64
	minItems    *int
	maxItems    *int
	required    []string
	additional  *schema // a map's values
	closed      bool    // a struct's: additionalProperties false
}

type prop struct {
	name string
	s    *schema
}

func f(v float64) *float64 { return &v }

// stringSchema is the schema of the standard library's types that marshal
// to JSON strings (jsonschema-go's initial type map).
func isStringType(t reflect.Type) bool {
	switch t.PkgPath() + "." + t.Name() {
	case "time.Time", "log/slog.Level", "math/big.Int", "math/big.Rat", "math/big.Float":
		return true
	}
	return false
}

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

func forType(t reflect.Type, seen map[reflect.Type]bool) (*schema, error) {
	allowNull := false
	for t.Kind() == reflect.Pointer {
		allowNull = true
		t = t.Elem()
	}
	if t.Name() != "" {
		if seen[t] {
			return nil, errors.New("cycle detected for type " + t.String())
		}
		seen[t] = true
		defer delete(seen, t)
	}
	s := &schema{}
	if isStringType(t) {
		s.typ = "string"
		if allowNull {
			s.types, s.typ = []string{"null", "string"}, ""
		}
		return s, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		s.typ = "boolean"
	case reflect.Int, reflect.Int64:
		s.typ = "integer"
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		s.typ, s.min = "integer", f(0)
	case reflect.Int8:
		s.typ, s.min, s.max = "integer", f(math.MinInt8), f(math.MaxInt8)
	case reflect.Uint8:
		s.typ, s.min, s.max = "integer", f(0), f(math.MaxUint8)
	case reflect.Int16:
		s.typ, s.min, s.max = "integer", f(math.MinInt16), f(math.MaxInt16)
	case reflect.Uint16:
		s.typ, s.min, s.max = "integer", f(0), f(math.MaxUint16)
	case reflect.Int32:
		s.typ, s.min, s.max = "integer", f(math.MinInt32), f(math.MaxInt32)
	case reflect.Uint32:
		s.typ, s.min, s.max = "integer", f(0), f(math.MaxUint32)
	case reflect.Float32, reflect.Float64:
		s.typ = "number"
	case reflect.Interface:
		// any value
	case reflect.String:
		s.typ = "string"
	case reflect.Map:
		if t.Key().Kind() != reflect.String && !t.Key().Implements(textMarshaler) {
			return nil, errors.New("unsupported map key type " + t.Key().Kind().String())
		}
		v, err := forType(t.Elem(), seen)
		if err != nil {
			return nil, errors.New("computing map value schema: " + err.Error())
		}
		s.typ, s.additional = "object", v
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice {
			s.types = []string{"null", "array"}
		} else {
			s.typ = "array"
			n := t.Len()
			s.minItems, s.maxItems = &n, &n
		}
		items, err := forType(t.Elem(), seen)
		if err != nil {
			return nil, errors.New("computing element schema: " + err.Error())
		}
		s.items = items
	case reflect.Struct:
		s.typ, s.closed = "object", true
		for _, field := range reflect.VisibleFields(t) {
			if s.props == nil {
				s.props = []prop{} // "properties": {} once t has a field, even unexported
			}
			if field.Anonymous {
				continue
			}
			name, opts, omit := jsonName(field)
			if omit {
				continue
			}
			fs, err := forType(field.Type, seen)
			if err != nil {
				return nil, err
			}
			if tag, ok := field.Tag.Lookup("jsonschema"); ok {
				if tag == "" {
					return nil, errors.New("empty jsonschema tag on struct field " + t.String() + "." + field.Name)
				}
				if reservedTag(tag) {
					return nil, errors.New("tag must not begin with 'WORD=': " + strconv.Quote(tag))
				}
				fs.description = tag
			}
			// a later field of the same name replaces an earlier one,
			// and takes its place in the order
			for i, p := range s.props {
				if p.name == name {
					s.props = append(s.props[:i], s.props[i+1:]...)
					break
				}
			}
			s.props = append(s.props, prop{name, fs})
			if !hasOpt(opts, "omitempty") && !hasOpt(opts, "omitzero") {
				s.required = append(s.required, name)
			}
		}
	default:
		return nil, errors.New("type " + t.String() + " is unsupported by jsonschema")
	}
	if allowNull && s.typ != "" {
		s.types, s.typ = []string{"null", s.typ}, ""
	}
	return s, nil
}

// jsonName is encoding/json's name for the field, its tag's options, and
// whether it is left out.
func jsonName(f reflect.StructField) (name, opts string, omit bool) {
	if !f.IsExported() {
		return "", "", true
	}
	name = f.Name
	if tag, ok := f.Tag.Lookup("json"); ok {
		n, rest, found := strings.Cut(tag, ",")
		if n == "-" && !found {
			return "", "", true
		}
		if n != "" {
			name = n
		}
		opts = rest
	}
	return name, opts, false
}

func hasOpt(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// reservedTag reports a description starting "WORD=" (kept for future
// options by jsonschema-go: `^[^ \t\n]*=`).
func reservedTag(tag string) bool {
	for i := 0; i < len(tag); i++ {
		switch tag[i] {
		case '=':
			return true
		case ' ', '\t', '\n':
			return false
		}
	}
	return false
}

// write writes s as jsonschema-go marshals it: "type", "properties",
// "items", then the other keywords in its Schema's field order; an empty
// schema is true.
func (s *schema) write(b *bytes.Buffer) {
	start := b.Len()
	b.WriteByte('{')
	n := 0
	key := func(k string) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(`"` + k + `":`)
	}
	str := func(v string) {
		q, _ := json.Marshal(v) // encoding/json's escaping, as jsonschema-go's
		b.Write(q)
	}
	strs := func(vs []string) {
		b.WriteByte('[')
		for i, v := range vs {
			if i > 0 {
				b.WriteByte(',')
			}
			str(v)
		}
		b.WriteByte(']')
	}
	num := func(v float64) {
		q, _ := json.Marshal(v)
		b.Write(q)
	}
	switch {
	case s.typ != "":
		key("type")
		str(s.typ)
	case s.types != nil:
		key("type")
		strs(s.types)
	}
	if s.props != nil {
		key("properties")
		b.WriteByte('{')
		for i, p := range s.props {
			if i > 0 {
				b.WriteByte(',')
			}
			str(p.name)
			b.WriteByte(':')
			p.s.write(b)
		}
		b.WriteByte('}')
	}
	if s.items != nil {
		key("items")
		s.items.write(b)
	}
	if s.description != "" {
		key("description")
		str(s.description)
	}
	if s.min != nil {
		key("minimum")
		num(*s.min)
	}
	if s.max != nil {
		key("maximum")
		num(*s.max)
	}
	if s.minItems != nil {
		key("minItems")
		b.WriteString(strconv.Itoa(*s.minItems))
	}
	if s.maxItems != nil {
		key("maxItems")
		b.WriteString(strconv.Itoa(*s.maxItems))
	}
	if len(s.required) > 0 {
		key("required")
		strs(s.required)
	}
	switch {
	case s.additional != nil:
		key("additionalProperties")
		s.additional.write(b)
	case s.closed:
		key("additionalProperties")
		b.WriteString("false")
	}
	b.WriteByte('}')
	if n == 0 {
		b.Truncate(start)
		b.WriteString("true")
	}
}
