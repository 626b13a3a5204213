package host_test

import (
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host"
)

// The span tree of a call across two aiod processes, the quota and guard
// spans, and trace context from _meta and headers are tested against the
// OpenTelemetry Collector's receiver in host/e2e/otelcol (a module of its
// own).

// TestTraceSettingsRefused: an endpoint or OTEL_ setting aiod cannot export
// to refuses to start, naming it.
func TestTraceSettingsRefused(t *testing.T) {
	for _, c := range []struct{ endpoint, env, val, want string }{
		{"ftp://127.0.0.1:4318", "", "", "OTLP endpoint"},
		{"http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_PROTOCOL"},
	} {
		if c.env != "" {
			t.Setenv(c.env, c.val)
		}
		_, err := host.New(t.Context(), host.Config{CacheDir: "-", OTLPEndpoint: c.endpoint})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s=%s: %v, want an error naming %s", c.endpoint, c.env, c.val, err, c.want)
		}
	}
}
