// Package guest is the guest's side of the aiod plugin ABI v1
// (spec/abi/v1.md; the contract itself is package sdk/abi): the aiod:core
// imports on wasip1, the family calling convention, and a fake host for
// native builds so plugin code unit-tests with plain `go test`.
package guest

// Handler is the guest's side of aiod_call, installed by package sdk.
var Handler func(op int32, name, args []byte) int32
