// Package jsontext renders the built-ins' JSON results: compact JSON with
// sorted object keys, as aiod emits them, in the tool result's text and
// the same object as its structuredContent.
//
// It exists for speed. In wasm, encoding/json spends about 0.1 s per MB
// encoding a string and about 0.4 s per MB compacting JSON it is handed
// (json.RawMessage); a file read or a command's full output can be many
// MB. The encoder here is a flat loop over the bytes, and the result hands
// the SDK the Go value, not pre-encoded JSON, so nothing is compacted.
//
// Strings are escaped as serde_json (aiod's encoder) does: `"`, `\` and
// control characters only (\b \f \n \r \t, else \u00XX); "<", ">", "&",
// U+2028 and U+2029 are left as they are. Invalid UTF-8 becomes U+FFFD.
package jsontext

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/aiodhq/aiod/sdk"
)

// Result is a tool result whose text is v as compact JSON with sorted
// keys and whose structuredContent is v.
func Result(v map[string]any, isError bool) *sdk.Result {
	return &sdk.Result{Content: []sdk.Content{sdk.Text(string(Append(nil, v)))}, Structured: v, IsError: isError}
}

// Marshal returns v as compact JSON with sorted keys.
func Marshal(v any) []byte { return Append(nil, v) }

// Append appends v as JSON. Maps, slices, strings, booleans, integers and
// nil are encoded here; anything else goes through encoding/json.
func Append(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
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
	j, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, j...)
}

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string. The loop is flat on purpose:
// function calls are expensive in wasm.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
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
