package upstream

import "testing"

// TestDecodeWire: what the guard passes on (the go-sdk would read it) and
// what it refuses (replaced by an error answer for the call).
func TestDecodeWire(t *testing.T) {
	for _, tc := range []struct {
		msg     string
		ok      bool
		request bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, true, true},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`, true, true},
		{`{"jsonrpc":"2.0","id":"a","result":{}}`, true, false},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"unknown tool","data":{"x":1}}}`, true, false},
		{`{"jsonrpc":"1.0","id":1,"result":{}}`, false, false},
		{`{"id":1,"result":{}}`, false, false},
		{`{"jsonrpc":"2.0","id":1.5,"result":{}}`, false, false},
		{`{"jsonrpc":"2.0","id":{"x":1},"result":{}}`, false, false},
		{`{"jsonrpc":"2.0","id":1}`, false, false},
		{`{"jsonrpc":"2.0","result":{}}`, false, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"message":"no code"}}`, false, false},
		{`{"jsonrpc":"2.0","id":1,"error":"text"}`, false, false},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":5}`, false, true},
		{`[{"jsonrpc":"2.0","id":1,"result":{}}]`, false, false},
		{`not json`, false, false},
		{`{"jsonrpc":"2.0","id":1,"result":{}} trailing`, false, false},
	} {
		m, err := decodeWire([]byte(tc.msg))
		if (err == nil) != tc.ok || (err == nil && m.isRequest() != tc.request) {
			t.Errorf("%s: err %v, want ok %v (request %v)", tc.msg, err, tc.ok, tc.request)
		}
	}
	a, _ := decodeWire([]byte(`{"jsonrpc":"2.0","id":"\u0061","result":{}}`))
	b, _ := decodeWire([]byte(`{"jsonrpc":"2.0","id":"a","method":"m"}`))
	if a.idKey() != b.idKey() {
		t.Errorf("ids %s and %s differ", a.ID, b.ID)
	}
	n, _ := decodeWire([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	if s, _ := decodeWire([]byte(`{"jsonrpc":"2.0","id":"1","result":{}}`)); n.idKey() == s.idKey() {
		t.Error("id 1 and id \"1\" compare equal")
	}
	if got := string(errorAnswer(b, `say "no"`)); got != `{"jsonrpc":"2.0","id":"a","error":{"code":-32603,"message":"say \"no\""}}` {
		t.Errorf("errorAnswer: %s", got)
	}
}
