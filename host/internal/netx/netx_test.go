package netx_test

import (
	"testing"

	"github.com/aiodhq/aiod/host/internal/netx"
)

func TestLoopback(t *testing.T) {
	for h, want := range map[string]bool{
		"localhost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true,
		"": false, "0.0.0.0": false, "::": false, "10.0.0.1": false, "example.com": false,
		"LOCALHOST": false, "a.localhost": false, "[::1]": false, "127.0.0.1:80": false,
	} {
		if got := netx.Loopback(h); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", h, got, want)
		}
	}
}
