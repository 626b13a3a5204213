//go:build !wasip1

package main

import (
	"testing"

	"github.com/aiodhq/aiod/sdk/sdktest"
)

func TestHash(t *testing.T) {
	h := sdktest.New(t)
	r := h.CallTool("hash", map[string]any{"mib": 1})
	if r.IsError || r.Text() != Sum(1) || len(r.Text()) != 64 {
		t.Fatalf("hash 1 MiB: %s", r.Raw)
	}
	if Sum(1) == Sum(2) {
		t.Fatal("1 and 2 MiB hash the same")
	}
	for _, bad := range []string{`{"mib":0}`, `{"mib":1025}`, `{}`, `{"mib":"1"}`} {
		if r := h.CallTool("hash", bad); !r.IsError {
			t.Fatalf("%s: want isError, got %s", bad, r.Raw)
		}
	}
}
