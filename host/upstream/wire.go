package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// wireMsg is what the guard needs of one JSON-RPC message. It is decoded
// with encoding/json, not the go-sdk's jsonrpc.DecodeMessage: that decoder
// allocates a 32 KiB buffer for every message, which on the forwarding path
// (a request and an answer per call, besides the go-sdk's own decoding)
// was most of the garbage a forwarded call made.
type wireMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    *int64          `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// hasID reports whether the message carries an id (a call, or a response).
func (m *wireMsg) hasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// isRequest: a call or a notification.
func (m *wireMsg) isRequest() bool { return m.Method != "" }

// isCall: a request that expects an answer.
func (m *wireMsg) isCall() bool { return m.isRequest() && m.hasID() }

// idKey is the message's id, comparable across encodings of the same
// value ("1" and "1", "\u0061" and "a").
func (m *wireMsg) idKey() string {
	if len(m.ID) > 0 && m.ID[0] == '"' {
		var s string
		_ = json.Unmarshal(m.ID, &s)
		return "s" + s
	}
	return "n" + string(m.ID)
}

var errNotJSONRPC = errors.New("not a JSON-RPC 2.0 message")

// decodeWire decodes and checks one JSON-RPC message as strictly as the
// go-sdk will when it reads the message after the guard (so a message the
// guard passes cannot break the go-sdk's connection): a 2.0 object; an id
// that is a string or an integer; a request with an object or array params;
// a response with a result or an error object with an integer code.
func decodeWire(b []byte) (*wireMsg, error) {
	var m wireMsg
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m.JSONRPC != "2.0" {
		return nil, errNotJSONRPC
	}
	if m.hasID() {
		switch id := bytes.TrimSpace(m.ID); {
		case id[0] == '"':
		default:
			if _, err := strconv.ParseInt(string(id), 10, 64); err != nil {
				return nil, errors.New("id is neither a string nor an integer")
			}
		}
	}
	switch {
	case m.isRequest():
		if p := bytes.TrimSpace(m.Params); len(p) > 0 && p[0] != '{' && p[0] != '[' && string(p) != "null" {
			return nil, errors.New("params is neither an object nor an array")
		}
	case !m.hasID():
		return nil, errors.New("a response without an id")
	case m.Error != nil:
		if m.Error.Code == nil {
			return nil, errors.New("an error without a code")
		}
	case len(m.Result) == 0:
		return nil, errors.New("a response without a result or an error")
	}
	return &m, nil
}

// errorAnswer is a JSON-RPC error response for the call's id.
func errorAnswer(call *wireMsg, why string) []byte {
	msg, _ := json.Marshal(why)
	b := make([]byte, 0, len(call.ID)+len(msg)+64)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, call.ID...)
	b = append(b, `,"error":{"code":-32603,"message":`...)
	b = append(b, msg...)
	return append(b, "}}"...)
}
