// Package otelcol tests aiod's traces against the OpenTelemetry
// Collector's own OTLP receiver (otlpreceiver), run in the test process
// on loopback, with two aiod processes (bin/aiod) exporting to it. It is
// a module of its own so that the collector's many modules stay out of
// aiod's go.mod; make test runs it (cd host/e2e/otelcol && go test).
package otelcol
