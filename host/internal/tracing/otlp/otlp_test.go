package otlp

import (
	"context"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/internal/tracing"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// TestEnabled: off by default; on with the flag or the standard endpoint
// variables; OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none win.
func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want bool
	}{
		{Options{Getenv: env(nil)}, false},
		{Options{Endpoint: "http://127.0.0.1:4318", Getenv: env(nil)}, true},
		{Options{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})}, true},
		{Options{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})}, true},
		{Options{Endpoint: "http://c:4318", Getenv: env(map[string]string{"OTEL_SDK_DISABLED": "true"})}, false},
		{Options{Endpoint: "http://c:4318", Getenv: env(map[string]string{"OTEL_TRACES_EXPORTER": "none"})}, false},
	} {
		if got := c.o.Enabled(); got != c.want {
			t.Errorf("%+v: enabled %v, want %v", c.o.Endpoint, got, c.want)
		}
	}
}

// TestStartRefuses: what aiod cannot export to is a start-up error naming
// the setting; off, Start does nothing.
func TestStartRefuses(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Endpoint: "ftp://c:4318", Getenv: env(nil)}, "want an http:// or https:// base URL"},
		{Options{Endpoint: "http://user:pw@c:4318", Getenv: env(nil)}, "without credentials"},
		{Options{Endpoint: "c:4318", Getenv: env(nil)}, "base URL"},
		{Options{Endpoint: "http://c:4318", Getenv: env(map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"})}, "OTLP only"},
		{Options{Endpoint: "http://c:4318", Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})}, "http/protobuf"},
		{Options{Endpoint: "http://c:4318", Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"})}, "http/protobuf"},
	} {
		if _, err := Start(ctx, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.o.Endpoint, err, c.want)
		}
		if tracing.On() {
			t.Fatal("a refused start turned tracing on")
		}
	}
	stop, err := Start(ctx, Options{Getenv: env(nil)})
	if err != nil || tracing.On() || stop(ctx) != nil {
		t.Fatalf("off: %v, on %v", err, tracing.On())
	}
}

func TestTracesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":         "http://127.0.0.1:4318/v1/traces",
		"http://127.0.0.1:4318/":        "http://127.0.0.1:4318/v1/traces",
		"https://otel.example/base/":    "https://otel.example/base/v1/traces",
		" http://collector:4318/otlp  ": "http://collector:4318/otlp/v1/traces",
	} {
		if got, err := TracesURL(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "collector:4318", "http://", "http://c:4318/?x=1", "http://c:4318/#f"} {
		if _, err := TracesURL(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
