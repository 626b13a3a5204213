// Package register adds the wasmtime engine to host's engine table
// (host.RegisterEngine) when built with cgo; without cgo it adds nothing,
// and `--engine wasmtime` fails at start-up naming the engines built in.
//
// It is imported for its side effect by cmd/aiod and by the tests that need
// wasmtime, never by package host, so that binaries not importing it do
// not link wasmtime's static library.
package register
