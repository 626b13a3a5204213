//go:build !wasip1

package guest

import "sync"

// NativeHost is the fake host used when plugin code runs natively (tests).
// Package sdk/sdktest installs one.
type NativeHost interface {
	WriteOutput(b []byte)
	Log(level int, msg string)
	Progress(progress, total float64, msg string)
	Call(module, name string, req []byte) (resp []byte, code uint32)
}

var (
	mu     sync.Mutex
	native NativeHost
)

// SetNativeHost installs h and returns a function restoring the previous one.
func SetNativeHost(h NativeHost) (restore func()) {
	mu.Lock()
	prev := native
	native = h
	mu.Unlock()
	return func() { mu.Lock(); native = prev; mu.Unlock() }
}

func host() NativeHost {
	mu.Lock()
	defer mu.Unlock()
	if native == nil {
		panic("aiod sdk: no host: run plugin code under sdktest in native builds")
	}
	return native
}

// WriteOutput appends b to the call's output.
func WriteOutput(b []byte) { host().WriteOutput(b) }

// Log sends a log message.
func Log(level int, msg string) { host().Log(level, msg) }

// Progress reports progress.
func Progress(progress, total float64, msg string) { host().Progress(progress, total, msg) }

// NativeCall calls a host function of a gated family on the fake host.
func NativeCall(module, name string, req []byte) ([]byte, uint32) {
	return host().Call(module, name, req)
}
