//go:build cgo

package sandboxtest

// AIO_ENGINE=wasmtime runs these tests on wasmtime (make test-wasmtime).
import _ "github.com/aiodhq/aiod/host/runtime/wasmtime/register"
