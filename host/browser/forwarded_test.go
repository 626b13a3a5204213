package browser

import (
	"context"
	"testing"
)

func TestForwardedCDPURL(t *testing.T) {
	const ws = "ws://127.0.0.1:9222/devtools/browser/0b1c-2d"
	for _, tc := range []struct {
		name string
		f    Forwarded
		want string
	}{
		{"https with a prefix and a key", Forwarded{Proto: "https", Host: "sb.example.com", Prefix: "/box/", Query: "api_key=k"}, "wss://sb.example.com/box/cdp/devtools/browser/0b1c-2d?api_key=k"},
		{"http, no prefix", Forwarded{Proto: "http", Host: "10.0.0.5:8080"}, "ws://10.0.0.5:8080/cdp/devtools/browser/0b1c-2d"},
		{"proto in capitals", Forwarded{Proto: "HTTPS", Host: "h", Prefix: "a/b"}, "wss://h/a/b/cdp/devtools/browser/0b1c-2d"},
		{"no host: unchanged", Forwarded{Proto: "https"}, ws},
	} {
		if got := tc.f.CDPURL(ws); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := (Forwarded{Host: "h"}).CDPURL("not a url"); got != "not a url" {
		t.Errorf("not a URL: %q", got)
	}
	ctx := WithForwarded(context.Background(), Forwarded{Host: "h"})
	if f, ok := ForwardedFrom(ctx); !ok || f.Host != "h" {
		t.Errorf("ForwardedFrom: %v %v", f, ok)
	}
	if _, ok := ForwardedFrom(context.Background()); ok {
		t.Error("ForwardedFrom without one: ok")
	}
}
