//go:build !unix

package fsroot

const oNonblock = 0
