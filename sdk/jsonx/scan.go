package jsonx

import "unicode/utf8"

// ScanObject checks b in a single pass, without allocating: that it is
// exactly one JSON object starting at b[0] (RFC 8259; whitespace after it
// allowed) and valid UTF-8, and where its top-level "type" member is. It
// is the hot path of a Machine Mode stream (every line of it, in the
// adapter and in the host's line reader), where decoding each line cost
// more than everything else.
//
// ok is false when b is not one JSON object or not UTF-8. Else typ is the
// raw text of the last top-level "type" member's string (nil when there is
// none), and slow is true when b needs decoding to be read exactly: a
// top-level key or the type with escapes in it, or a type that is not a
// string.
func ScanObject(b []byte) (typ []byte, slow, ok bool) {
	s := scanner{b: b}
	if len(b) == 0 || b[0] != '{' {
		return nil, false, false
	}
	if !s.object(0, true) {
		return nil, false, false
	}
	s.ws()
	if s.i != len(b) {
		return nil, false, false
	}
	return s.typ, s.slow, true
}

// Valid reports whether b is exactly one JSON value (RFC 8259; whitespace
// around it allowed), as encoding/json.Valid does, byte for byte: bytes
// that are not valid UTF-8 are allowed inside strings, as encoding/json
// allows them (FuzzValid holds the two to the same answer). One pass
// that allocates nothing: the host's check of every plugin's result.
func Valid(b []byte) bool {
	s := scanner{b: b, lax: true}
	if !s.value(0) {
		return false
	}
	s.ws()
	return s.i == len(b)
}

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

type scanner struct {
	b    []byte
	i    int
	typ  []byte
	slow bool
	lax  bool // strings may hold bytes that are not UTF-8 (Valid)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// plainUTF8[c] and plainLax[c] tell a byte that stands for itself in a
// string's contents: printable ASCII but the quote and the backslash, and
// (plainLax, for Valid) any byte from 0x80 on. The scan skips a run of
// them with one table lookup a byte.
var plainUTF8, plainLax [256]bool

func init() {
	for c := 0x20; c < 256; c++ {
		plain := c != '"' && c != '\\'
		plainUTF8[c] = plain && c < utf8.RuneSelf
		plainLax[c] = plain
	}
}

// str reads a string at s.i (its opening quote) and returns its contents'
// bounds and whether it has escapes.
func (s *scanner) str() (start, end int, esc, ok bool) {
	b := s.b
	plain := &plainUTF8
	if s.lax {
		plain = &plainLax
	}
	i := s.i + 1
	start = i
	for {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			s.i = i
			return 0, 0, false, false
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return start, i, esc, true
		case c == '\\':
			esc = true
			i++
			if i >= len(b) {
				s.i = i
				return 0, 0, false, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+4 >= len(b) {
					s.i = i
					return 0, 0, false, false
				}
				for k := 1; k <= 4; k++ {
					if !isHex(b[i+k]) {
						s.i = i
						return 0, 0, false, false
					}
				}
				i += 5
			default:
				s.i = i
				return 0, 0, false, false
			}
		case c < 0x20:
			s.i = i
			return 0, 0, false, false
		default: // from 0x80 on, not lax
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				s.i = i
				return 0, 0, false, false
			}
			i += size
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (s *scanner) value(depth int) bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(depth+1, false)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		_, _, _, ok := s.str()
		return ok
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	}
	return s.number()
}

func (s *scanner) lit(w string) bool {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return false
	}
	s.i += len(w)
	return true
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

func (s *scanner) number() bool {
	b := s.b
	if s.i < len(b) && b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(b):
		return false
	case b[s.i] == '0':
		s.i++
	case b[s.i] >= '1' && b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.i < len(b) && b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return false
		}
	}
	if s.i < len(b) && (b[s.i] == 'e' || b[s.i] == 'E') {
		s.i++
		if s.i < len(b) && (b[s.i] == '+' || b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

func (s *scanner) array(depth int) bool {
	if depth > maxDepth {
		return false
	}
	s.i++ // [
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(depth) {
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// object reads an object at s.i; top marks the line's own object, whose
// "type" member is recorded.
func (s *scanner) object(depth int, top bool) bool {
	if depth > maxDepth {
		return false
	}
	s.i++ // {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		ks, ke, kesc, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		isType := top && !kesc && string(s.b[ks:ke]) == "type"
		if top && kesc {
			s.slow = true // a key with escapes may spell "type"
		}
		s.ws()
		if isType && s.i < len(s.b) && s.b[s.i] == '"' {
			vs, ve, vesc, ok := s.str()
			if !ok {
				return false
			}
			s.typ = s.b[vs:ve]
			if vesc {
				s.slow = true
			}
		} else {
			if isType {
				s.slow = true // not a string: decoding says how it is wrong
			}
			if !s.value(depth) {
				return false
			}
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}
