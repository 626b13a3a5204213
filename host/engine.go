package host

import (
	"cmp"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/aiodhq/aiod/host/internal/buildid"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// DefaultEngine is the engine used when Config.Engine is empty.
const DefaultEngine = "wazero"

// DefaultSnapshots is whether a tenant's instances start from a snapshot
// of its first instance's initialised state (the zero Config.NoSnapshots).
const DefaultSnapshots = true

// DefaultSnapshotSpares is how many spare snapshots each module keeps
// ready for tenants never seen before, refilled in the background
// (Config.SnapshotSpares; BENCHMARKS.md, "Instances from snapshots").
const DefaultSnapshotSpares = 4

// EngineOptions are what every engine is built from.
type EngineOptions struct {
	// CacheDir persists compiled modules keyed by module digest (and the
	// engine's own version); empty keeps them in memory only.
	CacheDir string
	// Snapshots starts an owner's instances from a snapshot of its first
	// instance's initialised state (wazero and wasmtime).
	Snapshots bool
	// SnapshotSpares is how many spare snapshots each module keeps ready
	// for tenants never seen before (at least one).
	SnapshotSpares int
}

// engines is the table of engines this binary was built with. Engines that
// need cgo register themselves (RegisterEngine) from a package behind a
// build tag, imported by the binary, not by this package.
var engines = map[string]func(EngineOptions) (runtime.Engine, error){
	"wazero": func(o EngineOptions) (runtime.Engine, error) {
		return wazero.New(wazero.Options{CacheDir: o.CacheDir, Snapshots: o.Snapshots, Spares: o.SnapshotSpares})
	},
}

// RegisterEngine adds the engine name to the table newEngine picks from.
// It is meant for package init functions; it panics on an empty or taken
// name.
func RegisterEngine(name string, f func(EngineOptions) (runtime.Engine, error)) {
	if name == "" || f == nil {
		panic("host: RegisterEngine with an empty name or a nil constructor")
	}
	if _, dup := engines[name]; dup {
		panic(fmt.Sprintf("host: engine %q registered twice", name))
	}
	engines[name] = f
}

// Engines lists the engines this binary was built with, sorted.
func Engines() []string {
	names := make([]string, 0, len(engines))
	for n := range engines {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func engineName(name string) string {
	if name == "" {
		return DefaultEngine
	}
	return name
}

// newEngine builds the named engine ("" is DefaultEngine).
func newEngine(name string, o EngineOptions) (runtime.Engine, error) {
	name = engineName(name)
	f, ok := engines[name]
	if !ok {
		return nil, fmt.Errorf("engine %q is not built into this binary (built with: %s)", name, strings.Join(Engines(), ", "))
	}
	return f(o)
}

// selfBuild is the running executable's Go build ID, read once.
var selfBuild = sync.OnceValues(buildid.Self)

// checkedRecords is where the plugin registry keeps its records of the
// plugins that passed their load check (plugin.Options.CheckedDir), beside
// the compiled modules, and the key naming this program and engine: the
// records of another build, or of the other engine, are never used. None
// without a cache directory, or when the executable's build ID cannot be
// read (a binary not linked by the go command).
func checkedRecords(cacheDir, engine string) (dir, key string) {
	id, err := selfBuild()
	if cacheDir == "" || err != nil {
		return "", ""
	}
	return filepath.Join(cacheDir, "checked"), cmp.Or(engine, DefaultEngine) + " " + id
}
