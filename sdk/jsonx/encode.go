// Package jsonx is JSON for plugins, written for speed in wasm: compact
// encoding with sorted object keys (as aiod emits it) and a one-pass
// decoder for flat structs, each falling back to encoding/json for what it
// does not handle.
//
// Why: in standard Go compiled to wasm a function call costs about 85 ns,
// and encoding/json spends about 0.1 s per MB encoding a string, 0.4 s per
// MB compacting a json.RawMessage and ~30 µs on a one-field object. The
// loops here are flat over the bytes (RATIONALE.md, "The SDK decodes
// arguments itself").
//
// Strings are escaped as serde_json (aiod's encoder) does: `"`, `\` and
// control characters only (\b \f \n \r \t, else \u00XX); "<", ">", "&",
// U+2028 and U+2029 are left as they are. Invalid UTF-8 becomes U+FFFD.
package jsonx

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Marshal returns v as compact JSON with sorted keys.
func Marshal(v any) []byte { return Append(nil, v) }

// Append appends v as JSON. Maps, slices, strings, booleans, numbers,
// json.RawMessage (appended as is: it must be valid), Appenders and nil
// are encoded here; anything else goes through encoding/json.
func Append(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case json.RawMessage:
		if len(x) == 0 {
			return append(b, "null"...)
		}
		return append(b, x...)
	case float64:
		if j, err := json.Marshal(x); err == nil {
			return append(b, j...)
		}
		return append(b, "null"...)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case map[string]string:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			b = AppendString(b, x[k])
		}
		return append(b, '}')
	case string:
		return AppendString(b, x)
	case *string:
		if x == nil {
			return append(b, "null"...)
		}
		return AppendString(b, *x)
	case bool:
		return strconv.AppendBool(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			b = Append(b, x[k])
		}
		return append(b, '}')
	case []string:
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, s)
		}
		return append(b, ']')
	case []int:
		b = append(b, '[')
		for i, n := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(n), 10)
		}
		return append(b, ']')
	case []map[string]any:
		b = append(b, '[')
		for i, m := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = Append(b, m)
		}
		return append(b, ']')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = Append(b, e)
		}
		return append(b, ']')
	}
	if a, ok := v.(Appender); ok {
		return a.AppendJSON(b)
	}
	j, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, j...)
}

// Appender is a value that appends its own JSON (Append writes it as
// is), for example a file's content kept by the host (sdk/files.Text).
type Appender interface {
	AppendJSON(b []byte) []byte
}

const hex = "0123456789abcdef"

// plain are the bytes a JSON string holds as they are: one table load per
// byte instead of four comparisons, in the loop every large text goes
// through.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends s as a JSON string. The loop is flat on purpose:
// function calls are expensive in wasm.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
