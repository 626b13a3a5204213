package plugin

// This file reads plugin packages: the manifests of a directory (or of
// the embedded built-ins) and their modules, read and checked only when
// needed.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/filedigest"
	"github.com/aiodhq/aiod/host/oci"
	"github.com/aiodhq/aiod/sdk/abi"
)

type source struct {
	name     string // the manifest's name, or the directory's when it did not parse
	manifest []byte
	m        *abi.Manifest // manifest, parsed and validated
	wasm     []byte        // nil until read (a built-in pinned by its manifest is read when compiled)
	digest   string        // hex sha256 of wasm, once read or known (digests)
	digests  *filedigest.Cache
	fsys     fs.FS
	module   string // the module's path in fsys
	pinned   string // the manifest's sha256, checked when the module is read late
	builtin  bool
	where    string
	err      error // the package could not be read or parsed
	// artifact and sigs are the package's record of the OCI artifact it
	// was pulled as and that artifact's signatures (oci.ArtifactFile,
	// oci.SignaturesFile); nil when it has none
	artifact, sigs []byte
}

// maxModuleBytes bounds a plugin module.
const maxModuleBytes = 256 << 20

// read returns the module's bytes, reading them if not yet read; a
// module read late must match the digest its manifest pinned.
func (s *source) read() ([]byte, error) {
	if s.wasm == nil {
		before, _ := fs.Stat(s.fsys, s.module)
		b, err := readLimited(s.fsys, s.module, maxModuleBytes)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: module: %w", s.name, err)
		}
		var after fs.FileInfo
		if s.digests != nil {
			after, _ = fs.Stat(s.fsys, s.module)
		}
		// a file unchanged while it was read and whose digest is known
		// is not hashed again (filedigest)
		digest, ok := s.digests.Unchanged(before, after)
		if !ok {
			sum := sha256.Sum256(b)
			digest = hex.EncodeToString(sum[:])
			moduleHashes.Add(1)
		}
		moduleReads.Add(1)
		if s.pinned != "" && digest != s.pinned {
			return nil, fmt.Errorf("plugin %s: module digest %s does not match the manifest's sha256 %s", s.name, digest, s.pinned)
		}
		s.wasm, s.digest = b, digest
		if s.digests != nil {
			s.digests.Remember(before, after, digest)
		}
	}
	return s.wasm, nil
}

// moduleReads counts the modules read, moduleHashes those of them hashed
// (tests).
var moduleReads, moduleHashes atomic.Int64

// known sets the module's digest without reading it when its file is one
// already hashed and unchanged since (filedigest), and reports whether it
// did; a known digest is checked against the manifest's as a read one is.
func (s *source) known() (bool, error) {
	if s.digests == nil || s.wasm != nil {
		return false, nil
	}
	st, err := fs.Stat(s.fsys, s.module)
	if err != nil {
		return false, nil
	}
	d, ok := s.digests.Lookup(st)
	if !ok {
		return false, nil
	}
	if s.pinned != "" && d != s.pinned {
		return false, fmt.Errorf("plugin %s: module digest %s does not match the manifest's sha256 %s", s.name, d, s.pinned)
	}
	s.digest = d
	return true, nil
}

// reader returns how to read the module again later (a dormant module's
// wake, lazy.go). A built-in is read again from the binary's embedded
// files, checked against digest. A module from a directory is kept in
// memory instead (~5 MB for a Go plugin, a quarter of its machine code):
// its file may be overwritten at any time, and a version that keeps
// serving after a broken new one was refused must still be able to wake.
func (s *source) reader(digest string) func() ([]byte, error) {
	if !s.builtin || s.fsys == nil {
		b := s.wasm
		return func() ([]byte, error) { return b, nil }
	}
	fsys, name, pname := s.fsys, s.module, s.name
	return func() ([]byte, error) {
		b, err := readLimited(fsys, name, maxModuleBytes)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: module: %w", pname, err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != digest {
			return nil, fmt.Errorf("plugin %s: module %s changed since it was loaded (sha256 %s, loaded %s)", pname, name, got, digest)
		}
		return b, nil
	}
}

// readPackages lists plugin packages: each subdirectory (or symbolic link
// to one) holding a manifest.json, in name order (built-ins in the order
// of their "order" file). A package that cannot be read or parsed is
// returned with its error, in its place.
//
// A module whose manifest pins its sha256 is read (and checked) only when
// compiled if late is set (built-ins, and every plugin at a background
// start-up); otherwise it is read and hashed here, as a reload needs its
// digest to tell a changed module from an unchanged one.
func readPackages(fsys fs.FS, dir string, builtin bool, where string, late bool, digests *filedigest.Cache) []source {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return []source{{name: where, where: where, err: fmt.Errorf("read plugins %s: %w", where, err)}}
	}
	var out []source
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	if builtin {
		// built-ins keep the order given by their "order" file
		if b, err := fs.ReadFile(fsys, path.Join(dir, "order")); err == nil {
			rank := map[string]int{}
			for i, n := range strings.Fields(string(b)) {
				rank[n] = i + 1
			}
			sort.SliceStable(ents, func(i, j int) bool {
				ri, rj := rank[ents[i].Name()], rank[ents[j].Name()]
				if ri == 0 {
					ri = 1 << 30
				}
				if rj == 0 {
					rj = 1 << 30
				}
				return ri < rj
			})
		}
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			// deploy tools swap a link (echo -> versions/2) atomically
			st, err := fs.Stat(fsys, path.Join(dir, e.Name()))
			isDir = err == nil && st.IsDir()
		}
		if !isDir {
			continue
		}
		pdir := path.Join(dir, e.Name())
		pwhere := filepath.Join(where, e.Name())
		fail := func(name string, err error) {
			out = append(out, source{name: name, builtin: builtin, where: pwhere, err: err})
		}
		mb, err := fs.ReadFile(fsys, path.Join(pdir, "manifest.json"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			fail(e.Name(), fmt.Errorf("plugin %s: %w", e.Name(), err))
			continue
		}
		m, err := caps.ParseManifest(mb)
		if err != nil {
			fail(e.Name(), fmt.Errorf("plugin %s (%s): %w", e.Name(), pwhere, err))
			continue
		}
		modName := m.Module
		if modName == "" {
			modName = "plugin.wasm"
		}
		src := source{name: m.Name, manifest: mb, m: m, fsys: fsys, module: path.Join(pdir, modName), builtin: builtin, where: pwhere, pinned: m.SHA256, digests: digests}
		if !builtin {
			if src.artifact, err = readOptional(fsys, path.Join(pdir, oci.ArtifactFile), oci.MaxArtifactBytes); err == nil {
				src.sigs, err = readOptional(fsys, path.Join(pdir, oci.SignaturesFile), maxSignaturesBytes)
			}
			if err != nil {
				fail(m.Name, fmt.Errorf("plugin %s: %w", m.Name, err))
				continue
			}
		}
		if late && m.SHA256 != "" {
			// pinned by its manifest: its digest is known without reading
			// it, and it is read and checked when compiled
			if st, err := fs.Stat(fsys, src.module); err != nil || st.Size() > maxModuleBytes {
				fail(m.Name, fmt.Errorf("plugin %s: module %s: missing or over %d bytes", m.Name, modName, maxModuleBytes))
				continue
			}
		} else if ok, err := src.known(); err != nil {
			fail(m.Name, err)
			continue
		} else if !ok {
			if _, err := src.read(); err != nil {
				fail(m.Name, err)
				continue
			}
		}
		out = append(out, src)
	}
	return out
}

func readLimited(fsys fs.FS, name string, max int64) ([]byte, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, over the %d byte limit", name, st.Size(), max)
	}
	return fs.ReadFile(fsys, name)
}

// maxSignaturesBytes bounds a package's signatures file.
const maxSignaturesBytes = oci.MaxSignaturesFileBytes

// readOptional reads a file of at most max bytes; nil if there is none.
func readOptional(fsys fs.FS, name string, max int64) ([]byte, error) {
	b, err := readLimited(fsys, name, max)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// readRemotes lists the packages fetched from registries: each one's
// cache directory holds the one package, which must be the plugin its
// policy entry names; a fetch that failed is its error, in its place.
func readRemotes(remotes []Remote, late bool, digests *filedigest.Cache) []source {
	var out []source
	for _, rm := range remotes {
		if rm.Err != nil {
			out = append(out, source{name: rm.Name, where: rm.Where, err: fmt.Errorf("plugin %s: %w", rm.Name, rm.Err)})
			continue
		}
		srcs := readPackages(os.DirFS(filepath.Dir(rm.Dir)), ".", false, rm.Where, late, digests)
		for i := range srcs {
			srcs[i].where = rm.Where
			if srcs[i].err == nil && srcs[i].name != rm.Name {
				srcs[i].err = fmt.Errorf("plugin %s: the artifact %s holds plugin %s", rm.Name, rm.Where, srcs[i].name)
				srcs[i].name = rm.Name
			}
		}
		if len(srcs) != 1 {
			srcs = []source{{name: rm.Name, where: rm.Where, err: fmt.Errorf("plugin %s: cache directory %s holds %d packages, want 1", rm.Name, filepath.Dir(rm.Dir), len(srcs))}}
		}
		out = append(out, srcs...)
	}
	return out
}

func isWasm(b []byte) bool { return len(b) >= 8 && string(b[:4]) == "\x00asm" }
