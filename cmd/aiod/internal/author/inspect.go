package author

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Import is one import of a module.
type Import struct {
	Module string `json:"module"`
	Name   string `json:"name"`
	Kind   string `json:"kind"` // func, table, memory, global
}

// Export is one export of a module.
type Export struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// Report is what Inspect finds in a module or a package.
type Report struct {
	// Path is what was inspected: a module file or a package directory.
	Path string `json:"path"`
	// Module is the module file; Size and SHA256 are its size and digest.
	Module string `json:"module"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Pinned is the manifest's sha256 (packages only) and DigestOK whether
	// the module matches it.
	Pinned   string `json:"pinned_sha256,omitempty"`
	DigestOK *bool  `json:"digest_ok,omitempty"`
	// Form is the module's form from its exports ("reactor", "command",
	// or "unknown"), Declared the manifest's form ("" is reactor).
	Form     string `json:"form"`
	Declared string `json:"declared_form,omitempty"`
	// Manifest is the package's manifest, or the module's describe.
	Manifest *abi.Manifest `json:"manifest,omitempty"`
	Imports  []Import      `json:"imports"`
	Exports  []Export      `json:"exports"`
	// Problems are what would keep a host from loading it as it is.
	Problems []string `json:"problems,omitempty"`
}

// Inspect reads a module file (*.wasm: a reactor is asked to describe
// itself) or a package directory (its manifest.json and module).
func Inspect(ctx context.Context, path string, o host.PackOptions) (*Report, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	r := &Report{Path: path}
	var wasm []byte
	if st.IsDir() {
		mb, err := os.ReadFile(filepath.Join(path, "manifest.json"))
		if err != nil {
			return nil, fmt.Errorf("%s is not a plugin package (no manifest.json; `aiod plugin build` makes one): %w", path, err)
		}
		m, err := caps.ParseManifest(mb)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r.Manifest = m
		r.Declared = m.Form
		r.Pinned = m.SHA256
		r.Module = filepath.Join(path, moduleName(m))
		if wasm, err = os.ReadFile(r.Module); err != nil {
			return nil, err
		}
	} else {
		r.Module = path
		if wasm, err = os.ReadFile(path); err != nil {
			return nil, err
		}
	}
	sum := sha256.Sum256(wasm)
	r.SHA256 = hex.EncodeToString(sum[:])
	r.Size = int64(len(wasm))
	if r.Pinned != "" {
		ok := r.Pinned == r.SHA256
		r.DigestOK = &ok
		if !ok {
			r.Problems = append(r.Problems, fmt.Sprintf("digest mismatch: the module's sha256 is %s, the manifest pins %s", r.SHA256, r.Pinned))
		}
	}
	info, err := parseModule(wasm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Module, err)
	}
	r.Imports, r.Exports = info.imports, info.exports
	r.Form = info.form()
	if r.Manifest == nil && r.Form == "reactor" {
		p, err := host.Pack(ctx, wasm, o)
		if err != nil {
			r.Problems = append(r.Problems, "describe: "+err.Error())
		} else if r.Manifest, err = caps.ParseManifest(p.Manifest); err != nil {
			return nil, err
		}
	}
	for _, im := range r.Imports {
		if im.Kind != "func" {
			r.Problems = append(r.Problems, fmt.Sprintf("imports %s %s.%s: only functions may be imported", im.Kind, im.Module, im.Name))
		}
	}
	return r, nil
}

// moduleName is the package's module file name.
func moduleName(m *abi.Manifest) string {
	if m.Module != "" {
		return m.Module
	}
	return "plugin.wasm"
}

// ImportedFamilies are the gated families r's module imports.
func (r *Report) ImportedFamilies() []abi.Family {
	var out []abi.Family
	for _, im := range r.Imports {
		for _, f := range abi.Families {
			if im.Module == f.ImportModule() && !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

type moduleInfo struct {
	imports []Import
	exports []Export
}

func (m *moduleInfo) has(name string) bool {
	return slices.ContainsFunc(m.exports, func(e Export) bool { return e.Name == name && e.Kind == "func" })
}

func (m *moduleInfo) form() string {
	switch {
	case m.has(abi.ExportCall) && m.has(abi.ExportVersion):
		return "reactor"
	case m.has("_start"):
		return "command"
	}
	return "unknown"
}

var errShort = errors.New("not a WebAssembly module: truncated")

// parseModule reads the import and export sections of a core module.
func parseModule(b []byte) (*moduleInfo, error) {
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return nil, errors.New("not a WebAssembly module (no \\0asm header)")
	}
	if b[4] != 1 || b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return nil, errors.New("not a WebAssembly core module (version 1): a component? aiod loads core modules")
	}
	info := &moduleInfo{}
	rd := &reader{b: b, i: 8}
	kinds := []string{"func", "table", "memory", "global", "tag"}
	kind := func(k byte) string {
		if int(k) < len(kinds) {
			return kinds[k]
		}
		return fmt.Sprintf("kind%d", k)
	}
	for rd.i < len(rd.b) {
		id := rd.byte()
		size := int(rd.u32())
		if rd.err != nil || rd.i+size > len(rd.b) {
			return nil, errShort
		}
		sec := &reader{b: rd.b[:rd.i+size], i: rd.i}
		rd.i += size
		switch id {
		case 2:
			for n := sec.u32(); n > 0 && sec.err == nil; n-- {
				im := Import{Module: sec.name(), Name: sec.name()}
				k := sec.byte()
				im.Kind = kind(k)
				switch k {
				case 0:
					sec.u32()
				case 1:
					sec.byte()
					sec.limits()
				case 2:
					sec.limits()
				case 3:
					sec.byte()
					sec.byte()
				default:
					sec.u32()
				}
				info.imports = append(info.imports, im)
			}
		case 7:
			for n := sec.u32(); n > 0 && sec.err == nil; n-- {
				e := Export{Name: sec.name()}
				e.Kind = kind(sec.byte())
				sec.u32()
				info.exports = append(info.exports, e)
			}
		}
		if sec.err != nil {
			return nil, sec.err
		}
	}
	return info, nil
}

type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) byte() byte {
	if r.i >= len(r.b) {
		r.err = errShort
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

func (r *reader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.err = errors.New("not a WebAssembly module: bad LEB128")
	return 0
}

func (r *reader) name() string {
	n := int(r.u32())
	if r.err != nil || r.i+n > len(r.b) {
		r.err = errShort
		return ""
	}
	s := string(r.b[r.i : r.i+n])
	r.i += n
	return s
}

func (r *reader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}
