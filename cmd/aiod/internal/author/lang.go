// Package author is the plugin author's side of aiod (`aiod plugin new,
// build, inspect, verify, test`): the languages and how each is built into
// an ABI v1 reactor module, the project templates, and the checks run on a
// module or package before a host loads it. Packing itself is host.Pack,
// the code cmd/aiodpack runs.
package author

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Lang names a plugin language.
type Lang string

// The languages.
const (
	Go             Lang = "go"
	C              Lang = "c"
	Rust           Lang = "rust"
	AssemblyScript Lang = "assemblyscript"
)

// Langs lists the languages in the order help texts show them.
var Langs = []Lang{Go, C, Rust, AssemblyScript}

// ParseLang accepts a language name or its short form ("as", "rs").
func ParseLang(s string) (Lang, error) {
	switch strings.ToLower(s) {
	case "go", "golang":
		return Go, nil
	case "c":
		return C, nil
	case "rust", "rs":
		return Rust, nil
	case "assemblyscript", "as":
		return AssemblyScript, nil
	}
	return "", fmt.Errorf("unknown language %q (one of go, c, rust, assemblyscript)", s)
}

// A toolchain is one language's build: its entry source file, the
// command that compiles it into a reactor module, and what to install
// when a tool is missing.
type toolchain struct {
	main string // the entry source file in the project directory
	// tool is the compiler's name; need says what provides it.
	tool, need string
	// args are the compiler's arguments; "{out}" is the module written.
	args []string
	env  []string
	// hints map a compiler error substring to the package that fixes it.
	hints [][2]string
}

var toolchains = map[Lang]toolchain{
	Go: {
		main: "main.go", tool: "go", need: "Go 1.24 or later (Debian package golang-go if recent enough)",
		args: []string{"build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s", "-o", "{out}", "."},
		env:  []string{"GOOS=wasip1", "GOARCH=wasm"},
	},
	C: {
		main: "main.c", tool: "clang", need: "the Debian packages clang, lld, wasi-libc and libclang-rt-14-dev-wasm32",
		args: []string{"--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-Wall", "-Wl,--strip-all", "-I", ".", "-o", "{out}", "main.c"},
		hints: [][2]string{
			{"libclang_rt.builtins-wasm32.a", "libclang-rt-14-dev-wasm32"},
			{"crt1-reactor.o", "wasi-libc"},
			{"'stdlib.h' file not found", "wasi-libc"},
			{"'string.h' file not found", "wasi-libc"},
			{"'stdint.h' file not found", "wasi-libc"},
			{"'stdio.h' file not found", "wasi-libc"},
			{"wasm-ld", "lld"},
		},
	},
	Rust: {
		main: "main.rs", tool: "rustc", need: "the Debian packages rustc and libstd-rust-dev-wasm32",
		args: []string{"--edition", "2021", "--target", "wasm32-wasi", "--crate-type", "cdylib", "-C", "opt-level=s", "-C", "strip=symbols", "-o", "{out}", "main.rs"},
		hints: [][2]string{
			{"can't find crate for `std`", "libstd-rust-dev-wasm32"},
			{"can't find crate for `core`", "libstd-rust-dev-wasm32"},
		},
	},
	AssemblyScript: {
		main: "main.ts", tool: "asc", need: "the npm package assemblyscript 0.28 (npm install in the project) and Node (Debian package nodejs)",
		args: []string{"main.ts", "-O", "--runtime", "incremental", "--exportStart", "_initialize", "--use", "abort=", "-o", "{out}"},
	},
}

// BuildCommand is the command line that compiles lang's project into out
// (relative to the project directory), as a build script would spell it.
func BuildCommand(lang Lang, out string) string {
	tc := toolchains[lang]
	tool := tc.tool
	if lang == Rust {
		tool = "/usr/bin/rustc"
	}
	if lang == AssemblyScript {
		tool = "npx asc"
	}
	parts := append([]string{}, tc.env...)
	parts = append(parts, tool)
	for _, a := range tc.args {
		a = strings.ReplaceAll(a, "{out}", out)
		if strings.ContainsAny(a, " `'\"") || a == "abort=" {
			a = "'" + a + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// Detect returns the language of the project in dir, from its entry
// source file.
func Detect(dir string) (Lang, error) {
	var found []Lang
	for _, l := range Langs {
		if _, err := os.Stat(filepath.Join(dir, toolchains[l].main)); err == nil {
			found = append(found, l)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("%s: no plugin source (main.go, main.c, main.rs or main.ts); `aiod plugin new` makes a project", dir)
	}
	return "", fmt.Errorf("%s: more than one language (%v): pass --lang", dir, found)
}

// ErrToolchain is wrapped by every error about a missing or broken
// toolchain; its message names what to install.
var ErrToolchain = errors.New("toolchain missing")

// Tools locates compilers. Path, if set, is searched instead of $PATH (and
// then /usr/bin/rustc is not preferred), which tests use; PathPrepend is
// searched before it. The compiler runs with that search path as PATH.
type Tools struct {
	Path        string
	PathPrepend string
}

// searchPath is the PATH compilers are looked up in and run with.
func (t Tools) searchPath() string {
	p := t.Path
	if p == "" {
		p = os.Getenv("PATH")
	}
	if t.PathPrepend != "" {
		p = t.PathPrepend + string(os.PathListSeparator) + p
	}
	return p
}

func (t Tools) look(name string) (string, error) {
	for _, d := range filepath.SplitList(t.searchPath()) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// compiler finds lang's compiler for the project in dir.
func (t Tools) compiler(lang Lang, dir string) (string, error) {
	tc := toolchains[lang]
	missing := func() error {
		return fmt.Errorf("%w: %s not found: install %s", ErrToolchain, tc.tool, tc.need)
	}
	switch lang {
	case Rust:
		// The rustup toolchain often first on PATH has no wasm32-wasi
		// target; Debian's has one with libstd-rust-dev-wasm32.
		if t.Path == "" {
			if _, err := os.Stat("/usr/bin/rustc"); err == nil {
				return "/usr/bin/rustc", nil
			}
		}
	case AssemblyScript:
		local := filepath.Join(dir, "node_modules", ".bin", "asc")
		if _, err := os.Stat(local); err == nil {
			if _, err := t.look("node"); err != nil {
				return "", fmt.Errorf("%w: node not found: install the Debian package nodejs", ErrToolchain)
			}
			return local, nil
		}
	}
	p, err := t.look(tc.tool)
	if err != nil {
		return "", missing()
	}
	if lang == AssemblyScript {
		if _, err := t.look("node"); err != nil {
			return "", fmt.Errorf("%w: node not found: install the Debian package nodejs", ErrToolchain)
		}
	}
	return p, nil
}

// Step is one command a build ran and how long it took.
type Step struct {
	Command  string
	Duration time.Duration
}

// Compile builds the project in dir (language lang, "" to detect) into
// the module out and returns the step it ran.
func (t Tools) Compile(ctx context.Context, dir string, lang Lang, out string) (Step, error) {
	if lang == "" {
		l, err := Detect(dir)
		if err != nil {
			return Step{}, err
		}
		lang = l
	}
	tc, ok := toolchains[lang]
	if !ok {
		return Step{}, fmt.Errorf("unknown language %q", lang)
	}
	bin, err := t.compiler(lang, dir)
	if err != nil {
		return Step{}, err
	}
	if lang == Rust {
		if err := checkRustTarget(ctx, bin); err != nil {
			return Step{}, err
		}
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return Step{}, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return Step{}, err
	}
	args := make([]string, len(tc.args))
	for i, a := range tc.args {
		args[i] = strings.ReplaceAll(a, "{out}", abs)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), tc.env...)
	cmd.Env = append(cmd.Env, "PATH="+t.searchPath())
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	began := time.Now()
	err = cmd.Run()
	step := Step{Command: bin + " " + strings.Join(args, " "), Duration: time.Since(began)}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		for _, h := range tc.hints {
			if strings.Contains(msg, h[0]) {
				return step, fmt.Errorf("%w: %s failed (install the Debian package %s):\n%s", ErrToolchain, tc.tool, h[1], msg)
			}
		}
		return step, fmt.Errorf("%s failed: %w\n%s", tc.tool, err, msg)
	}
	return step, nil
}

// checkRustTarget fails, naming libstd-rust-dev-wasm32, when rustc has no
// wasm32-wasi standard library.
func checkRustTarget(ctx context.Context, rustc string) error {
	out, err := exec.CommandContext(ctx, rustc, "--print", "sysroot").Output()
	if err != nil {
		return fmt.Errorf("%w: %s --print sysroot: %v", ErrToolchain, rustc, err)
	}
	lib := filepath.Join(strings.TrimSpace(string(out)), "lib", "rustlib", "wasm32-wasi")
	if _, err := os.Stat(lib); err != nil {
		return fmt.Errorf("%w: %s has no wasm32-wasi standard library (%s): install the Debian packages rustc and libstd-rust-dev-wasm32, and use /usr/bin/rustc", ErrToolchain, rustc, lib)
	}
	return nil
}
