package plugin

// This file remembers, across starts, the plugins that passed their load
// check, so that a start of the same program with the same inputs lists
// them without compiling them (they start dormant, lazy.go).

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/renameio/v2"

	"github.com/aiodhq/aiod/sdk/abi"
)

// checkedRecords keeps one file per plugin that passed its check in dir:
// <sha256 of key and the plugin's key>.json, holding both keys (the file
// is used only if they match) and the module's exports. key names the
// program (Options.CheckedKey): a record of another build is never used.
type checkedRecords struct {
	dir, key string
}

type checkedRecord struct {
	Program string   `json:"program"`
	Plugin  string   `json:"plugin"` // Plugin.key: module digest, manifest, grant, configuration
	Exports []string `json:"exports"`
	// Awake is set while the module's machine code is in memory (woken
	// by a call, not yet put to sleep): a start that finds it set wakes
	// the module in the background (Options.Prewake).
	Awake bool `json:"awake,omitempty"`
}

func (c checkedRecords) path(p *Plugin) string {
	h := sha256.Sum256([]byte(c.key + "\x00" + p.key))
	return filepath.Join(c.dir, hex.EncodeToString(h[:])+".json")
}

// lookup returns the exports of p's module if a start of this program
// checked p with the same inputs before (nil otherwise, and for a record
// that does not parse or names other inputs), and whether the module was
// awake when the record was last written.
func (c checkedRecords) lookup(p *Plugin) (exports []string, awake bool) {
	if c.dir == "" || c.key == "" {
		return nil, false
	}
	b, err := os.ReadFile(c.path(p))
	if err != nil {
		return nil, false
	}
	var r checkedRecord
	if json.Unmarshal(b, &r) != nil || r.Program != c.key || r.Plugin != p.key ||
		!slices.Contains(r.Exports, abi.ExportVersion) || !slices.Contains(r.Exports, abi.ExportCall) {
		return nil, false
	}
	return r.Exports, r.Awake
}

// store records that p passed its check, and whether its module is awake
// (written atomically; a failure only costs the next start a compile).
func (c checkedRecords) store(p *Plugin, exports []string, awake bool) {
	if c.dir == "" || c.key == "" {
		return
	}
	b, err := json.Marshal(checkedRecord{Program: c.key, Plugin: p.key, Exports: exports, Awake: awake})
	if err != nil {
		return
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		p.log.Debug("check record not kept", "err", err)
		return
	}
	if err := renameio.WriteFile(c.path(p), b, 0o644); err != nil {
		p.log.Debug("check record not kept", "err", err)
	}
}

// digestsFile is where the registry keeps the module digests it knows by
// file identity (filedigest.Cache), beside the records: a start lists the
// plugins of a directory whose files have not changed without reading
// and hashing their modules, and reads a module it wakes without hashing
// it. "" without records.
func (c checkedRecords) digestsFile() string {
	if c.dir == "" || c.key == "" {
		return ""
	}
	return filepath.Join(c.dir, "module-digests")
}

// loadDigests loads the digests the last start saved.
func (r *Registry) loadDigests() {
	if p := r.checked.digestsFile(); p != "" {
		if err := r.digests.Load(p); err != nil {
			r.log.Debug("module digests not loaded", "err", err)
		}
	}
}

// saveDigests saves the digests, when they changed.
func (r *Registry) saveDigests() {
	p := r.checked.digestsFile()
	if p == "" {
		return
	}
	err := os.MkdirAll(filepath.Dir(p), 0o755)
	if err == nil {
		err = r.digests.Save(p)
	}
	if err != nil {
		r.log.Debug("module digests not saved", "err", err)
	}
}
