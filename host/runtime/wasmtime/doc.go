// Package wasmtime implements host/runtime on wasmtime (through
// wasmtime-go's C API, so it needs cgo). Built without cgo the package is
// empty and the binary has only wazero.
//
// The semantics are wazero's (host/runtime/wazero), each through wasmtime's
// own mechanism: deadlines and cancellation by epoch interruption (one
// ticker per engine, a per-store epoch callback that stops the guest once
// the call's context is done), memory caps by store limits, link-time
// gating with runtime.ImportError, WASI with no preopens and captured
// stdout/stderr, and compiled modules cached on disk keyed by module digest
// and engine version. Beyond wazero: fuel metering (runtime.Config.Fuel),
// on a second engine configured with consume_fuel that only metered
// modules are compiled by, and instantiation through an InstancePre made
// once per compiled module. Instances from snapshots (Options.Snapshots,
// runtime.Owned) are wazero's design on wasmtime's memory: snapshot.go.
package wasmtime
