package host

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// DefaultEngine is the engine used when Config.Engine is empty.
const DefaultEngine = "wazero"

// EngineOptions are what every engine is built from.
type EngineOptions struct {
	// CacheDir persists compiled modules keyed by module digest (and the
	// engine's own version); empty keeps them in memory only.
	CacheDir string
}

// engines is the table of engines this binary was built with. Engines that
// need cgo register themselves from a file behind a build tag.
var engines = map[string]func(EngineOptions) (runtime.Engine, error){
	"wazero": func(o EngineOptions) (runtime.Engine, error) {
		return wazero.New(wazero.Options{CacheDir: o.CacheDir})
	},
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
