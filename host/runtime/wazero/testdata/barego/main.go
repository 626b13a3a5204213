// Command barego is a Go plugin with nothing but the Go runtime: one
// export that does no work and imports no package. Its initialisation is
// the floor of every Go guest's (BenchmarkGoRuntimeFloor).
package main

//go:wasmexport aiod_call
func call(op, toolLen, argsLen int32) int32 { return 0 }

func main() {}
