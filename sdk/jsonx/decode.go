package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Unmarshal decodes data into v (a pointer) like json.Unmarshal, with the
// fast path for flat struct fields. Keys match field names exactly (not
// case-insensitively, unlike encoding/json).
func Unmarshal(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return json.Unmarshal(data, v)
	}
	d, ok := cache.Load(t.Elem())
	if !ok {
		d, _ = cache.LoadOrStore(t.Elem(), DecoderFor(t.Elem()))
	}
	return d.(*Decoder).Decode(data, v)
}

var cache sync.Map // reflect.Type -> *Decoder

// Decoder decodes JSON into values of one type. Make it once per type.
type Decoder = decoder

// DecoderFor returns the decoder of type t.
func DecoderFor(t reflect.Type) *Decoder { return decoderFor(t) }

// Decode decodes data into dst, a pointer to the decoder's type.
func (d *decoder) Decode(data []byte, dst any) error { return d.decode(data, dst) }

// decoder decodes a tool's JSON arguments into a struct. Flat fields of
// kind string, bool, int, float and pointers to those are set directly with
// a single pass over the bytes; anything else falls back to encoding/json
// for that field. In a wasm guest encoding/json spends ~30 µs on a
// one-field object, this path ~0.25 µs (RATIONALE.md, "The SDK decodes
// arguments itself").
type decoder struct {
	typ    reflect.Type
	fields map[string]*field
	list   []*field // the same, in declaration order, for a linear scan
	whole  bool     // not a struct: decode all with encoding/json
}

type field struct {
	name   string
	offset uintptr
	kind   reflect.Kind
	ptr    bool // pointer to kind
	typ    reflect.Type
	// special is json.RawMessage or map[string]string, each decoded its
	// own way (compared once here: a reflect.Type comparison per call is
	// a runtime call in wasm)
	special special
	// plain: a string field set straight from the member loop (decode)
	plain bool
}

type special uint8

// The special field types (0: none).
const (
	specialRaw special = iota + 1
	specialStringMap
)

func decoderFor(t reflect.Type) *decoder {
	d := &decoder{typ: t}
	if t == nil || t.Kind() != reflect.Struct {
		d.whole = true
		return d
	}
	d.fields = map[string]*field{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		if sf.Anonymous {
			d.whole = true // embedded structs: let encoding/json handle promotion
			return d
		}
		name := sf.Name
		if tag, ok := sf.Tag.Lookup("json"); ok {
			n, _, _ := strings.Cut(tag, ",")
			if n == "-" {
				continue
			}
			if n != "" {
				name = n
			}
		}
		f := &field{name: name, offset: sf.Offset, typ: sf.Type, kind: sf.Type.Kind()}
		switch sf.Type {
		case rawMessage:
			f.special = specialRaw
		case stringMap:
			f.special = specialStringMap
		}
		f.plain = f.kind == reflect.String
		if f.kind == reflect.Pointer {
			switch sf.Type.Elem().Kind() {
			case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64:
				f.ptr = true
				f.kind = sf.Type.Elem().Kind()
			}
		}
		if _, dup := d.fields[name]; !dup {
			d.list = append(d.list, f)
		}
		d.fields[name] = f
	}
	return d
}

var errSyntax = errors.New("arguments are not a JSON object")

var (
	rawMessage = reflect.TypeOf(json.RawMessage(nil))
	stringMap  = reflect.TypeOf(map[string]string(nil))
)

// decodeStringMap decodes a JSON object of strings (checked by skipValue)
// in one pass; a member that is not a string falls back to encoding/json
// for the whole object (and its error).
func decodeStringMap(raw []byte) (map[string]string, error) {
	str := func(i int) (string, int, bool) {
		if i >= len(raw) || raw[i] != '"' {
			return "", 0, false
		}
		s, e, esc, next := scanString(raw, i)
		if next < 0 || !utf8.Valid(raw[s:e]) {
			return "", 0, false
		}
		if esc {
			v, ok := unquote(raw[s:e])
			return v, next, ok
		}
		return makeString(raw[s:e]), next, true
	}
	slow := func() (map[string]string, error) {
		var m map[string]string
		err := json.Unmarshal(raw, &m)
		return m, err
	}
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return slow()
	}
	m := map[string]string{}
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return m, nil
	}
	for {
		k, next, ok := str(i)
		if !ok {
			return slow()
		}
		i = skipWS(raw, next)
		if i >= len(raw) || raw[i] != ':' {
			return slow()
		}
		v, next, ok := str(skipWS(raw, i+1))
		if !ok {
			return slow()
		}
		m[k] = v
		i = skipWS(raw, next)
		if i < len(raw) && raw[i] == ',' {
			i = skipWS(raw, i+1)
			continue
		}
		if i < len(raw) && raw[i] == '}' {
			return m, nil
		}
		return slow()
	}
}

// decode decodes data into dst, which must be a pointer to d.typ.
func (d *decoder) decode(data []byte, dst any) error {
	i := skipWS(data, 0)
	if i == len(data) || (len(data)-i == 4 && string(data[i:]) == "null") {
		return nil
	}
	if d.whole {
		return json.Unmarshal(data, dst)
	}
	base := (*[2]unsafe.Pointer)(unsafe.Pointer(&dst))[1]
	if data[i] != '{' {
		return errSyntax
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return checkTrailing(data, i+1)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return errSyntax
		}
		ks, ke, esc, next := scanString(data, i)
		if next < 0 {
			return errSyntax
		}
		var key string
		if esc {
			k, ok := unquote(data[ks:ke])
			if !ok {
				return errSyntax
			}
			key = k
		} else {
			key = unsafe.String(unsafe.SliceData(data[ks:ke]), ke-ks)
		}
		i = skipWS(data, next)
		if i >= len(data) || data[i] != ':' {
			return errSyntax
		}
		i = skipWS(data, i+1)
		vs := i
		var ve int
		if f := d.find(key); f != nil && f.plain && i < len(data) && data[i] == '"' {
			// a string for a string field, the usual argument: one scan
			// that finds its end, its escapes and whether it is ASCII,
			// and the field set from it (f.set does the rest)
			var err error
			if ve, err = setString(base, f, data, i); err != nil {
				return err
			}
		} else {
			ve = skipValue(data, i)
			if ve < 0 {
				return errSyntax
			}
			if f != nil {
				if err := f.set(base, data[vs:ve]); err != nil {
					return fmt.Errorf("%s: %w", f.name, err)
				}
			}
		}
		i = skipWS(data, ve)
		if i >= len(data) {
			return errSyntax
		}
		if data[i] == ',' {
			i = skipWS(data, i+1)
			continue
		}
		if data[i] == '}' {
			return checkTrailing(data, i+1)
		}
		return errSyntax
	}
}

// find looks a key up: a linear scan for a few fields (hashing the key
// costs more in wasm), the map beyond.
func (d *decoder) find(key string) *field {
	if len(d.list) <= 16 {
		for _, f := range d.list {
			if f.name == key {
				return f
			}
		}
		return nil
	}
	return d.fields[key]
}

// setString sets f, a string field, from the JSON string at data[i] and
// returns the index after it: as skipValue then f.set would, with their
// errors, in one scan of a string without escapes.
func setString(base unsafe.Pointer, f *field, data []byte, i int) (int, error) {
	var high byte
	j := i + 1
	for ; j < len(data); j++ {
		c := data[j]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		high |= c
	}
	if j >= len(data) || data[j] != '"' {
		// escapes, a control character or no end: the general path
		next := skipValue(data, i)
		if next < 0 {
			return 0, errSyntax
		}
		if err := f.set(base, data[i:next]); err != nil {
			return 0, fmt.Errorf("%s: %w", f.name, err)
		}
		return next, nil
	}
	p := (*string)(unsafe.Add(base, f.offset))
	if high >= utf8.RuneSelf && !utf8.Valid(data[i+1:j]) {
		// encoding/json replaces invalid UTF-8, as f.set lets it
		if err := json.Unmarshal(data[i:j+1], p); err != nil {
			return 0, fmt.Errorf("%s: %w", f.name, err)
		}
		return j + 1, nil
	}
	*p = makeString(data[i+1 : j])
	return j + 1, nil
}

func checkTrailing(data []byte, i int) error {
	if skipWS(data, i) != len(data) {
		return errSyntax
	}
	return nil
}

func (f *field) set(base unsafe.Pointer, raw []byte) error {
	if len(raw) == 4 && string(raw) == "null" {
		return nil
	}
	p := unsafe.Add(base, f.offset)
	if f.special == specialRaw {
		// skipValue checked it: a copy, not a second pass of encoding/json
		*(*json.RawMessage)(p) = append(json.RawMessage(nil), raw...)
		return nil
	}
	if f.special == specialStringMap {
		m, err := decodeStringMap(raw)
		if err != nil {
			return err
		}
		*(*map[string]string)(p) = m
		return nil
	}
	if f.ptr {
		// allocate the pointee and set through it
		nv := reflect.New(f.typ.Elem())
		*(*unsafe.Pointer)(p) = nv.UnsafePointer()
		p = nv.UnsafePointer()
	}
	switch f.kind {
	case reflect.String:
		if raw[0] != '"' {
			return errors.New("expected a string")
		}
		s, e, esc, _ := scanString(raw, 0)
		if !utf8.Valid(raw[s:e]) { // let encoding/json replace invalid UTF-8 as it does
			return json.Unmarshal(raw, (*string)(p))
		}
		if esc {
			v, ok := unquote(raw[s:e])
			if !ok {
				return errors.New("bad string")
			}
			*(*string)(p) = v
		} else {
			*(*string)(p) = makeString(raw[s:e])
		}
		return nil
	case reflect.Bool:
		switch string(raw) {
		case "true":
			*(*bool)(p) = true
		case "false":
			*(*bool)(p) = false
		default:
			return errors.New("expected a boolean")
		}
		return nil
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			fl, ferr := strconv.ParseFloat(string(raw), 64)
			if ferr != nil || fl != math.Trunc(fl) || math.Abs(fl) > 1<<53 {
				return errors.New("expected an integer")
			}
			n = int64(fl)
		}
		switch f.kind {
		case reflect.Int:
			*(*int)(p) = int(n)
		case reflect.Int64:
			*(*int64)(p) = n
		case reflect.Int32:
			if n < math.MinInt32 || n > math.MaxInt32 {
				return errors.New("integer out of range")
			}
			*(*int32)(p) = int32(n)
		}
		return nil
	case reflect.Float64:
		fl, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return errors.New("expected a number")
		}
		*(*float64)(p) = fl
		return nil
	}
	return json.Unmarshal(raw, reflect.NewAt(f.typ, p).Interface())
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString scans the string starting at b[i]=='"'. It returns the content
// bounds, whether it has escapes, and the index after the closing quote
// (-1 when unterminated).
func scanString(b []byte, i int) (start, end int, esc bool, next int) {
	start = i + 1
	for j := start; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return start, j, esc, j + 1
		case c == '\\':
			esc = true
			j++
		case c < 0x20:
			return 0, 0, false, -1
		}
	}
	return 0, 0, false, -1
}

// skipValue returns the index after the JSON value at b[i], or -1: the
// value's end as skipTrusted finds it, and the value valid JSON (a string
// without escapes needs no second look).
func skipValue(b []byte, i int) int {
	next := skipTrusted(b, i)
	if next < 0 {
		return -1
	}
	if b[i] == '"' && bytes.IndexByte(b[i+1:next-1], '\\') < 0 {
		return next
	}
	if !json.Valid(b[i:next]) {
		return -1
	}
	return next
}

// unquote decodes the content of a JSON string with escapes.
func unquote(s []byte) (string, bool) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(s) {
			return "", false
		}
		switch s[i] {
		case '"', '\\', '/':
			out = append(out, s[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if r2, ok := hex4(s, i+3); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							out = utf8.AppendRune(out, d)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	// out is this string's own and never written again
	return unsafe.String(unsafe.SliceData(out), len(out)), true
}

func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
