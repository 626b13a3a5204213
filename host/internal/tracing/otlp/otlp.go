// Package otlp starts aiod's trace export: the OpenTelemetry SDK with a
// batching OTLP/HTTP (protobuf) exporter, configured from --otlp-endpoint
// and the standard OTEL_ environment variables.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/aiodhq/aiod/host/internal/tracing"
)

// Options configure the export.
type Options struct {
	// Endpoint is the OTLP/HTTP base URL (http://collector:4318): traces
	// go to its /v1/traces, as with OTEL_EXPORTER_OTLP_ENDPOINT. Empty:
	// the environment decides (OTEL_EXPORTER_OTLP_ENDPOINT,
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); with neither, tracing is off.
	Endpoint string
	// Version is the service.version resource attribute.
	Version string
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
}

// Enabled reports whether o turns export on: an endpoint given or in the
// environment, and neither OTEL_SDK_DISABLED=true nor
// OTEL_TRACES_EXPORTER=none.
func (o Options) Enabled() bool {
	get := o.getenv()
	if strings.EqualFold(strings.TrimSpace(get("OTEL_SDK_DISABLED")), "true") || strings.TrimSpace(get("OTEL_TRACES_EXPORTER")) == "none" {
		return false
	}
	return o.Endpoint != "" || get("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

func (o Options) getenv() func(string) string {
	if o.Getenv != nil {
		return o.Getenv
	}
	return os.Getenv
}

// Start turns tracing on when o says so and returns the function that
// flushes the spans still buffered and turns it off (a no-op when it was
// off). The rest of the exporter's settings (headers, timeout,
// compression, the batch processor's, the sampler's) come from the
// standard OTEL_ variables.
func Start(ctx context.Context, o Options) (shutdown func(context.Context) error, err error) {
	if !o.Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	if exp := strings.TrimSpace(o.getenv()("OTEL_TRACES_EXPORTER")); exp != "" && exp != "otlp" {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: aiod exports traces over OTLP only (otlp or none)", exp)
	}
	if p := strings.TrimSpace(o.getenv()("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")); p == "" {
		p = strings.TrimSpace(o.getenv()("OTEL_EXPORTER_OTLP_PROTOCOL"))
		if p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: aiod exports over OTLP/HTTP (http/protobuf) only", p)
		}
	} else if p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=%q: aiod exports over OTLP/HTTP (http/protobuf) only", p)
	}
	var opts []otlptracehttp.Option
	if o.Endpoint != "" {
		u, err := TracesURL(o.Endpoint)
		if err != nil {
			return nil, err
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceVersion(o.Version)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	res, _ = resource.Merge(resource.NewSchemaless(semconv.ServiceName("aiod")), res) // OTEL_SERVICE_NAME wins
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	tracing.Enable(tp)
	return func(ctx context.Context) error {
		tracing.Disable()
		return tp.Shutdown(ctx)
	}, nil
}

// TracesURL is the traces URL of an OTLP/HTTP base URL: its path with
// /v1/traces appended. Only http and https URLs with a host are taken.
func TracesURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("OTLP endpoint %q: want an http:// or https:// base URL without credentials, query or fragment (http://collector:4318)", base)
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/v1/traces"
	return u.String(), nil
}
