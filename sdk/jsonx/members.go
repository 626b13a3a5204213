package jsonx

import (
	"unicode/utf8"
	"unsafe"
)

// Members calls f with each member of the JSON object data, its key
// unescaped and its value raw, in order, until f returns false. It trusts
// the nesting inside member values (brackets are matched, strings skipped,
// nothing is validated there): it is for documents the host wrote, such
// as a guard's hook event, where encoding/json's validation of every
// nested value costs more than the rest of the call. The object's own
// syntax is checked.
func Members(data []byte, f func(key string, raw []byte) bool) error {
	return Walk(data, func(m Member) bool { return f(m.Key, data[m.Value:m.End]) })
}

// Member is one member of a JSON object as Walk reads it: its key
// (unescaped; it may share the document's memory, so copy it to keep it
// past the call) and where it lies in the document: Start at its key's
// opening quote, Value at its value, End just after its value.
type Member struct {
	Key               string
	Start, Value, End int
}

// Walk calls f with each member of the JSON object data, in order, until
// f returns false, trusting the nesting inside member values as Members
// does and checking the object's own syntax (nothing but white space after
// it). It is the one scanner of object members of the module: the host's
// result and envelope splices use it too.
func Walk(data []byte, f func(m Member) bool) error {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
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
		start := i
		ks, ke, esc, next := scanString(data, i)
		if next < 0 {
			return errSyntax
		}
		key := unsafe.String(unsafe.SliceData(data[ks:ke]), ke-ks)
		if esc {
			k, ok := unquote(data[ks:ke])
			if !ok {
				return errSyntax
			}
			key = k
		}
		i = skipWS(data, next)
		if i >= len(data) || data[i] != ':' {
			return errSyntax
		}
		i = skipWS(data, i+1)
		vs := i
		ve := skipTrusted(data, i)
		if ve < 0 {
			return errSyntax
		}
		if !f(Member{Key: key, Start: start, Value: vs, End: ve}) {
			return nil
		}
		i = skipWS(data, ve)
		if i >= len(data) {
			return errSyntax
		}
		switch data[i] {
		case ',':
			i = skipWS(data, i+1)
		case '}':
			return checkTrailing(data, i+1)
		default:
			return errSyntax
		}
	}
}

// skipTrusted returns the index after the value at b[i] (-1 when it does
// not end), matching brackets and skipping strings without validating.
func skipTrusted(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		_, _, _, next := scanString(b, i)
		return next
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				_, _, _, next := scanString(b, j)
				if next < 0 {
					return -1
				}
				j = next - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// String decodes the JSON string raw (with its quotes).
func String(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", errSyntax
	}
	s, e, esc, next := scanString(raw, 0)
	if next != len(raw) {
		return "", errSyntax
	}
	v := string(raw[s:e])
	if esc {
		u, ok := unquote(raw[s:e])
		if !ok {
			return "", errSyntax
		}
		v = u
	}
	if !utf8.ValidString(v) {
		v = string([]rune(v)) // each invalid byte becomes U+FFFD, as encoding/json does
	}
	return v, nil
}

// StringMap decodes a JSON object of strings (null: nil).
func StringMap(raw []byte) (map[string]string, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	return decodeStringMap(raw)
}
