package core

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/sdk/abi"
)

// TestClientErrorMapping: a Client's error kinds become ABI codes in one
// place, keeping the Client's message and detail fields.
func TestClientErrorMapping(t *testing.T) {
	detail := map[string]any{"requiredCapabilities": map[string]any{"elicitation": map[string]any{}}}
	tests := []struct {
		name   string
		err    error
		code   abi.Code
		msg    string
		detail map[string]any
	}{
		{"invalid", &hostfn.ClientError{Kind: hostfn.ErrClientInvalid, Message: "notify: bad"}, abi.Invalid, "notify: bad", nil},
		{"unavailable with detail", &hostfn.ClientError{Kind: hostfn.ErrClientUnavailable, Message: "no capability", Detail: detail}, abi.Unavailable, "no capability", detail},
		{"timeout", &hostfn.ClientError{Kind: hostfn.ErrClientTimeout, Message: "no answer"}, abi.Timeout, "no answer", nil},
		{"input required", &hostfn.ClientError{Kind: hostfn.ErrClientInputRequired, Message: "input required: 1 request(s) for the client"}, abi.InputRequired, "input required: 1 request(s) for the client", nil},
		{"wrapped kind", fmt.Errorf("outer: %w", hostfn.ErrClientInvalid), abi.Invalid, "outer: invalid request to the client", nil},
		{"unknown error", errors.New("boom"), abi.Internal, "boom", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var he *hostfn.Error
			if !errors.As(clientError(tt.err), &he) {
				t.Fatalf("clientError(%v) is not an *Error", tt.err)
			}
			if he.Code != tt.code || he.Message != tt.msg || !reflect.DeepEqual(he.Detail, tt.detail) {
				t.Errorf("got code %v message %q detail %v, want %v %q %v", he.Code, he.Message, he.Detail, tt.code, tt.msg, tt.detail)
			}
		})
	}
	if clientError(nil) != nil {
		t.Error("clientError(nil) != nil")
	}
}
