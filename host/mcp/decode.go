package mcp

import (
	"bytes"
	"errors"
	"unicode/utf8"
	"unsafe"

	"github.com/aiodhq/aiod/sdk/jsonx"
)

// decodeMessage parses one JSON-RPC message without reflection: the
// envelope into req, and (when params is an object) the params fields
// every method reads into p. Values kept raw (id, arguments,
// _meta.clientCapabilities, ...) alias body, which the caller owns and
// must not reuse while they live.
//
// It validates the whole body as JSON first (jsonx.Valid, encoding/json's
// rules in one pass that allocates nothing; errSyntax: -32700), then reads
// the members it needs with jsonx.Walk, which trusts what Valid checked. A
// field of the wrong type in the envelope is errType (-32600); in params
// it leaves p empty, as a failed params decode always has, and the method
// reports what it misses.
func decodeMessage(body []byte, req *message, p *params) error {
	if !jsonx.Valid(body) {
		return errSyntax
	}
	if firstByte(body) != '{' {
		return errType
	}
	typeErr := false
	if jsonx.Walk(body, func(m jsonx.Member) bool {
		v := body[m.Value:m.End]
		switch m.Key {
		case "jsonrpc", "method":
			s, isStr := stringValue(v)
			if !isStr {
				typeErr = true
			} else if m.Key == "jsonrpc" {
				req.JSONRPC = s
			} else {
				req.Method = s
			}
		case "id":
			req.ID = v
		case "params":
			req.Params = v
		case "result":
			req.Result = v
		case "error":
			req.Error = v
		}
		return true
	}) != nil {
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

// stringValue decodes v when it is a JSON string (isStr); v is valid JSON.
// v is part of a request's own copy of its body, which nothing writes
// (decodeMessage): a string without escapes in valid UTF-8 (a method, a
// tool name) is those bytes themselves, not a copy.
func stringValue(v []byte) (s string, isStr bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	if len(v) >= 2 {
		if in := v[1 : len(v)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
			return unsafe.String(unsafe.SliceData(in), len(in)), true
		}
	}
	s, err := jsonx.String(v)
	return s, err == nil
}

// newString is a new *string holding s (apart, so that the decoded
// string does not escape where it is not kept).
func newString(s string) *string { return &s }

// decodeParams fills p from a params object already validated as JSON;
// false on a field of the wrong type.
func decodeParams(b []byte, p *params) bool {
	good := true
	str := func(v []byte, dst **string) {
		s, isStr := stringValue(v)
		if !isStr {
			if string(v) != "null" {
				good = false
			}
			return
		}
		if p.nstr < len(p.strs) {
			p.strs[p.nstr] = s
			*dst = &p.strs[p.nstr]
			p.nstr++
			return
		}
		*dst = newString(s)
	}
	err := jsonx.Walk(b, func(m jsonx.Member) bool {
		v := b[m.Value:m.End]
		switch m.Key {
		case "name":
			str(v, &p.Name)
		case "uri":
			str(v, &p.URI)
		case "cursor":
			str(v, &p.Cursor)
		case "requestState":
			str(v, &p.RequestState)
		case "taskId":
			str(v, &p.TaskID)
		case "level":
			str(v, &p.Level)
		case "protocolVersion":
			var pv *string
			str(v, &pv)
			if pv != nil {
				p.ProtocolVersion = *pv
			}
		case "arguments":
			p.Arguments = v
		case "inputResponses":
			p.InputResponses = v
		case "capabilities":
			p.Capabilities = v
		case "clientInfo":
			p.ClientInfo = v
		case "ref":
			p.Ref = v
		case "argument":
			p.Argument = v
		case "requestId":
			p.RequestID = v
		case "notifications":
			p.Notifications = v
		case "_meta":
			switch v[0] {
			case 'n': // null
			case '{':
				meta := &reqMeta{}
				p.Meta = meta
				good = jsonx.Walk(v, func(m jsonx.Member) bool {
					mv := v[m.Value:m.End]
					switch m.Key {
					case metaProtocolVersion:
						str(mv, &meta.ProtocolVersion)
					case metaLogLevel:
						str(mv, &meta.LogLevel)
					case metaClientCapabilities:
						meta.ClientCapabilities = mv
					case metaClientInfo:
						meta.ClientInfo = mv
					case "progressToken":
						meta.ProgressToken = mv
					}
					return true
				}) == nil && good
			default:
				good = false
			}
		}
		return true
	})
	return err == nil && good
}
