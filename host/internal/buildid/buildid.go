// Package buildid reads the Go build ID of an executable: the hash of its
// inputs that the go command writes into every binary it links. Two links
// of the same code give the same ID; any change to the code, its
// dependencies or its build flags gives another.
package buildid

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// Self returns the build ID of the running executable.
func Self() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return Of(exe)
}

// Of returns the build ID of the ELF executable at path (an error for a
// file that is not ELF or has no Go build ID note).
func Of(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return "", errors.New("no Go build ID note")
	}
	b, err := s.Data()
	if err != nil {
		return "", err
	}
	return parseNote(b, f.ByteOrder)
}

// noteType is the type of the Go build ID's ELF note (cmd/link).
const noteType = 4

// parseNote reads an ELF note: name size, description size and type (four
// bytes each), the name "Go" padded to four bytes, then the description,
// the build ID.
func parseNote(b []byte, order binary.ByteOrder) (string, error) {
	if len(b) < 12 {
		return "", errors.New("build ID note: short")
	}
	namesz, descsz, typ := order.Uint32(b), order.Uint32(b[4:]), order.Uint32(b[8:])
	name := (uint64(namesz) + 3) &^ 3
	if typ != noteType || namesz != 4 || uint64(len(b)-12) < name+uint64(descsz) {
		return "", fmt.Errorf("build ID note: type %d, name %d bytes, description %d bytes in %d", typ, namesz, descsz, len(b))
	}
	if string(b[12:15]) != "Go\x00" {
		return "", errors.New("build ID note: not Go's")
	}
	id := string(b[12+name : 12+name+uint64(descsz)])
	if id == "" {
		return "", errors.New("build ID note: empty")
	}
	return id, nil
}
