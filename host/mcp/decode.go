package mcp

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// decodeMessage parses one JSON-RPC message in a single pass over the
// bytes, without reflection: the envelope into req, and (when params is an
// object) the params fields every method reads into p. Values kept raw
// (id, arguments, _meta.clientCapabilities, ...) alias body, which the
// caller owns and must not reuse while they live.
//
// It validates the whole body as JSON (errSyntax: -32700). A field of the
// wrong type in the envelope is errType (-32600); in params it leaves p
// empty, as a failed params decode always has, and the method reports what
// it misses.
func decodeMessage(body []byte, req *message, p *params) error {
	s := scanner{b: body}
	s.ws()
	if s.i >= len(s.b) {
		return errSyntax
	}
	if s.b[s.i] != '{' {
		if !s.value(0) || !s.end() {
			return errSyntax
		}
		return errType
	}
	typeErr := false
	ok := s.object(func(key []byte, esc bool) bool {
		k := keyString(key, esc)
		start := s.i
		switch k {
		case "jsonrpc", "method":
			v, isStr, ok := s.stringValue()
			if !ok {
				return false
			}
			if !isStr {
				typeErr = true
			} else if k == "jsonrpc" {
				req.JSONRPC = v
			} else {
				req.Method = v
			}
			return true
		}
		if !s.value(0) {
			return false
		}
		raw := json.RawMessage(s.b[start:s.i])
		switch k {
		case "id":
			req.ID = raw
		case "params":
			req.Params = raw
		case "result":
			req.Result = raw
		case "error":
			req.Error = raw
		}
		return true
	})
	if !ok || !s.end() {
		return errSyntax
	}
	if typeErr {
		return errType
	}
	if len(req.Params) > 0 && req.Params[0] == '{' {
		if !decodeParams(req.Params, p) {
			*p = params{}
		}
	}
	return nil
}

var (
	errSyntax = errors.New("invalid JSON")
	errType   = errors.New("invalid request: expected a single JSON-RPC object")
)

// decodeParams fills p from a params object already validated as JSON;
// false on a field of the wrong type.
func decodeParams(b []byte, p *params) bool {
	s := scanner{b: b}
	good := true
	str := func(dst **string) bool {
		v, isStr, ok := s.stringValue()
		if !ok {
			return false
		}
		if !isStr {
			if v != "null" {
				good = false
			}
			return true
		}
		*dst = &v
		return true
	}
	raw := func(dst *json.RawMessage) bool {
		start := s.i
		if !s.value(0) {
			return false
		}
		*dst = s.b[start:s.i]
		return true
	}
	ok := s.object(func(key []byte, esc bool) bool {
		switch keyString(key, esc) {
		case "name":
			return str(&p.Name)
		case "uri":
			return str(&p.URI)
		case "cursor":
			return str(&p.Cursor)
		case "requestState":
			return str(&p.RequestState)
		case "taskId":
			return str(&p.TaskID)
		case "level":
			return str(&p.Level)
		case "protocolVersion":
			var v *string
			if !str(&v) {
				return false
			}
			if v != nil {
				p.ProtocolVersion = *v
			}
			return true
		case "arguments":
			return raw(&p.Arguments)
		case "inputResponses":
			return raw(&p.InputResponses)
		case "capabilities":
			return raw(&p.Capabilities)
		case "clientInfo":
			return raw(&p.ClientInfo)
		case "ref":
			return raw(&p.Ref)
		case "argument":
			return raw(&p.Argument)
		case "requestId":
			return raw(&p.RequestID)
		case "notifications":
			return raw(&p.Notifications)
		case "_meta":
			if s.i < len(s.b) && s.b[s.i] == 'n' {
				return s.value(0) // null
			}
			if s.i >= len(s.b) || s.b[s.i] != '{' {
				good = false
				return s.value(0)
			}
			m := &reqMeta{}
			p.Meta = m
			return s.object(func(key []byte, esc bool) bool {
				switch keyString(key, esc) {
				case metaProtocolVersion:
					return str(&m.ProtocolVersion)
				case metaLogLevel:
					return str(&m.LogLevel)
				case metaClientCapabilities:
					return raw(&m.ClientCapabilities)
				case metaClientInfo:
					return raw(&m.ClientInfo)
				case "progressToken":
					return raw(&m.ProgressToken)
				}
				return s.value(0)
			})
		}
		return s.value(0)
	})
	return ok && good
}

// keyString returns a string's content, unescaped when it has escapes and
// with invalid UTF-8 replaced by U+FFFD, as encoding/json does.
func keyString(key []byte, esc bool) string {
	if !esc && utf8.Valid(key) {
		return string(key)
	}
	var k string
	q := make([]byte, 0, len(key)+2)
	q = append(append(append(q, '"'), key...), '"')
	if json.Unmarshal(q, &k) != nil {
		return ""
	}
	return k
}

// scanner is a minimal validating JSON scanner.
type scanner struct {
	b []byte
	i int
}

const maxDepth = 512

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

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// object scans an object at s.i, calling f with s.i at each value; f must
// consume the value.
func (s *scanner) object(f func(key []byte, esc bool) bool) bool {
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		s.ws()
		key, esc, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.ws()
		if !f(key, esc) {
			return false
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

// stringValue scans a value; when it is a string it returns it decoded
// (isStr), otherwise the raw value text.
func (s *scanner) stringValue() (v string, isStr, ok bool) {
	if s.i < len(s.b) && s.b[s.i] == '"' {
		raw, esc, ok := s.str()
		if !ok {
			return "", false, false
		}
		return keyString(raw, esc), true, true
	}
	start := s.i
	if !s.value(0) {
		return "", false, false
	}
	return string(s.b[start:s.i]), false, true
}

// str scans a string at s.i and returns its content between the quotes.
func (s *scanner) str() (content []byte, esc, ok bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false
	}
	s.i++
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			content = s.b[start:s.i]
			s.i++
			return content, esc, true
		case c == '\\':
			esc = true
			if s.i+1 >= len(s.b) {
				return nil, false, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, false, false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !isHex(h) {
						return nil, false, false
					}
				}
				s.i += 6
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		default:
			s.i++
		}
	}
	return nil, false, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// value scans any JSON value at s.i.
func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) || depth > maxDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(func([]byte, bool) bool { return s.value(depth + 1) })
	case c == '[':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return true
		}
		for {
			s.ws()
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.i >= len(s.b) {
				return false
			}
			if s.b[s.i] == ']' {
				s.i++
				return true
			}
			if s.b[s.i] != ',' {
				return false
			}
			s.i++
		}
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return false
}

func (s *scanner) lit(w string) bool {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return false
	}
	s.i += len(w)
	return true
}

// number scans a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	b := s.b
	if s.i < len(b) && b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(b) && b[s.i] >= '0' && b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(b) && b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return false
	}
	if s.i < len(b) && b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(b) && (b[s.i] == 'e' || b[s.i] == 'E') {
		s.i++
		if s.i < len(b) && (b[s.i] == '+' || b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
