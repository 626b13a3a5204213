package author

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aiodhq/aiod/host"
)

// BuildOptions configure Build.
type BuildOptions struct {
	Lang Lang // "" detects it from the entry source file
	// Into installs the package as Into/<plugin name>; empty writes it to
	// <dir>/build/<plugin name>.
	Into string
	// Scratch is where the module is compiled; empty is <dir>/build.
	Scratch string
	Tools   Tools
	Pack    host.PackOptions
}

// Built is what Build made.
type Built struct {
	Lang       Lang
	Module     string // the compiled module, <scratch>/plugin.wasm
	PackageDir string // where the package was written
	Package    *host.Package
	Steps      []Step // compile, then pack
}

// Build compiles the project in dir into a reactor module and packs it
// (manifest from the module's describe, sha256 pinned) into a package.
func Build(ctx context.Context, dir string, o BuildOptions) (*Built, error) {
	lang := o.Lang
	if lang == "" {
		l, err := Detect(dir)
		if err != nil {
			return nil, err
		}
		lang = l
	}
	scratch := o.Scratch
	if scratch == "" {
		scratch = filepath.Join(dir, "build")
	}
	b := &Built{Lang: lang, Module: filepath.Join(scratch, "plugin.wasm")}
	step, err := o.Tools.Compile(ctx, dir, lang, b.Module)
	if err != nil {
		return nil, err
	}
	b.Steps = append(b.Steps, step)
	began := time.Now()
	wasm, err := os.ReadFile(b.Module)
	if err != nil {
		return nil, err
	}
	p, err := host.Pack(ctx, wasm, o.Pack)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", b.Module, err)
	}
	b.Package = p
	b.PackageDir = filepath.Join(dir, "build", p.Name)
	if o.Into != "" {
		b.PackageDir = filepath.Join(o.Into, p.Name)
	}
	if err := p.WriteDir(b.PackageDir); err != nil {
		return nil, err
	}
	b.Steps = append(b.Steps, Step{Command: "pack " + b.PackageDir, Duration: time.Since(began)})
	return b, nil
}
