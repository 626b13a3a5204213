// Command badabi is a test module that claims ABI version 2.
package main

//go:wasmexport aiod_abi_version
func abiVersion() int32 { return 2 }

//go:wasmexport aiod_call
func call(op int32, nameLen, argsLen uint32) int32 { return 0 }

func main() {}
