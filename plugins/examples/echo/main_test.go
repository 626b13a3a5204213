//go:build !wasip1

package main

import (
	"fmt"
	"testing"

	"github.com/aiodhq/aiod/sdk/sdktest"
)

func TestEcho(t *testing.T) {
	h := sdktest.New(t)
	for _, text := range []string{"hi", "", "with \"quotes\" and\nnewlines", "é ✓ \u2028"} {
		r := h.CallTool("echo", map[string]any{"text": text})
		if r.IsError || len(r.Content) != 1 || r.Content[0].Type != "text" || r.Text() != text {
			t.Fatalf("echo %q: %s", text, r.Raw)
		}
	}
	if r := h.CallTool("echo", `{"text": 5}`); !r.IsError {
		t.Fatalf("a number for text: want isError, got %s", r.Raw)
	}
}

func TestDescribe(t *testing.T) {
	m := sdktest.New(t).Describe()
	if m.Name != "echo" || len(m.Tools) != 1 || m.Tools[0].Name != "echo" {
		t.Fatalf("manifest: %+v", m)
	}
}

// Example: the echo tool, run natively under sdktest.
func ExampleEcho() {
	h := sdktest.New(&testing.T{})
	r := h.CallTool("echo", map[string]any{"text": "hello"})
	fmt.Println(r.Text(), r.IsError)
	// Output: hello false
}
