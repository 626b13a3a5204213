//go:build cgo && !linux

package wasmtime

import "errors"

// canMap: no memfds here; snapshots are restored by copying.
const canMap = false

type memfdImage struct{}

func newMemfdImage([]byte, []pageRun) (*memfdImage, error) {
	return nil, errors.New("no memfd on this platform")
}

func (*memfdImage) mapOver([]byte, []pageRun) error { return errors.New("no memfd on this platform") }

func (*memfdImage) close() {}
