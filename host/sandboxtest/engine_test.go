//go:build cgo

package sandboxtest

// wasmtime is in the engine table (runtimetest.Engines) in cgo builds: the
// host needs its registration to run a test on it (host.Config.Engine).
import _ "github.com/aiodhq/aiod/host/runtime/wasmtime/register"
