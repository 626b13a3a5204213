package author

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	assdk "github.com/aiodhq/aiod/sdk/assemblyscript"
	csdk "github.com/aiodhq/aiod/sdk/c"
	rustsdk "github.com/aiodhq/aiod/sdk/rust"
)

//go:embed templates
var templates embed.FS

// goSDKModules are the modules the Go SDK's packages come from besides
// aiod itself (TestGoSDKModules checks the list): a new Go project
// requires them at the aiod tree's versions and copies their go.sum lines.
// None today: the SDK infers schemas itself (sdk/internal/infer).
var goSDKModules []string

// NewOptions configure New.
type NewOptions struct {
	Lang Lang // "" is Go
	// GoSDK is the aiod source tree a Go project's go.mod points at
	// (replace directive); required for Go.
	GoSDK string
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

var langNames = map[Lang]string{Go: "Go", C: "C", Rust: "Rust", AssemblyScript: "AssemblyScript"}

// New writes a new plugin project named name into dir (created; it must
// be empty or absent): source with one tool named after the plugin, a
// build script, examples.json (the test `aiod plugin test` runs), a README.
// It returns the files written, relative to dir.
func New(name, dir string, o NewOptions) ([]string, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("plugin name %q: use 1 to 64 of a-z, 0-9, '-' and '_', starting with a letter or digit", name)
	}
	lang := o.Lang
	if lang == "" {
		lang = Go
	}
	tc, ok := toolchains[lang]
	if !ok {
		return nil, fmt.Errorf("unknown language %q", lang)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%s exists and is not empty", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	files := map[string][]byte{}
	sdkFile := ""
	switch lang {
	case Go:
		if o.GoSDK == "" {
			return nil, errors.New("a Go plugin needs the aiod source tree for its SDK: pass --sdk DIR (a checkout of aiod)")
		}
		sdk, err := filepath.Abs(o.GoSDK)
		if err != nil {
			return nil, err
		}
		goVersion, req, sum, err := goSDKRequires(sdk)
		if err != nil {
			return nil, err
		}
		mod, err := render("go/go.mod.tmpl", name, lang, map[string]string{"__GOSDK__": sdk, "__GOREQUIRE__": req, "__GOVERSION__": goVersion})
		if err != nil {
			return nil, err
		}
		files["go.mod"], files["go.sum"] = mod, sum
		for _, f := range []string{"main.go", "main_test.go"} {
			if files[f], err = render("go/"+f+".tmpl", name, lang, nil); err != nil {
				return nil, err
			}
		}
	case C:
		files["aiod.h"], sdkFile = csdk.Header, "`aiod.h` (the SDK), "
	case Rust:
		files["aiod.rs"], sdkFile = rustsdk.Source, "`aiod.rs` (the SDK), "
	case AssemblyScript:
		files["aiod.ts"], sdkFile = assdk.Source, "`aiod.ts` (the SDK), `package.json`, "
		var err error
		if files["package.json"], err = render("assemblyscript/package.json.tmpl", name, lang, nil); err != nil {
			return nil, err
		}
	}
	if lang != Go {
		var err error
		if files[tc.main], err = render(string(lang)+"/"+tc.main+".tmpl", name, lang, nil); err != nil {
			return nil, err
		}
	}
	common := map[string]string{"README.md": "README.md.tmpl", "examples.json": "examples.json.tmpl", "build.sh": "build.sh.tmpl", ".gitignore": "gitignore.tmpl"}
	for f, t := range common {
		b, err := render("common/"+t, name, lang, map[string]string{
			"__BUILD__": BuildCommand(lang, "build/plugin.wasm"), "__MAIN__": tc.main, "__SDKFILE__": sdkFile,
			"__TOOLCHAIN__": tc.tool})
		if err != nil {
			return nil, err
		}
		files[f] = b
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for f, b := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(f, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, mode); err != nil {
			return written, err
		}
		written = append(written, f)
	}
	return written, nil
}

func render(tmpl, name string, lang Lang, vars map[string]string) ([]byte, error) {
	b, err := templates.ReadFile("templates/" + tmpl)
	if err != nil {
		return nil, err
	}
	s := strings.NewReplacer("__NAME__", name, "__LANGNAME__", langNames[lang]).Replace(string(b))
	for k, v := range vars {
		s = strings.ReplaceAll(s, k, v)
	}
	return []byte(s), nil
}

// goSDKRequires reads the aiod tree's go.mod and go.sum for the modules
// of goSDKModules: its go version (a project's may not be lower), the
// require lines and the go.sum lines a project needs.
func goSDKRequires(sdk string) (goVersion, require string, sum []byte, err error) {
	mod, err := os.ReadFile(filepath.Join(sdk, "go.mod"))
	if err != nil {
		return "", "", nil, fmt.Errorf("--sdk %s: not an aiod source tree: %w", sdk, err)
	}
	if !bytes.Contains(mod, []byte("module github.com/aiodhq/aiod\n")) {
		return "", "", nil, fmt.Errorf("--sdk %s: go.mod is not module github.com/aiodhq/aiod", sdk)
	}
	gosum, err := os.ReadFile(filepath.Join(sdk, "go.sum"))
	if err != nil {
		return "", "", nil, fmt.Errorf("--sdk %s: %w", sdk, err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go "); ok {
			goVersion = strings.TrimSpace(v)
		}
	}
	if goVersion == "" {
		return "", "", nil, fmt.Errorf("--sdk %s: go.mod has no go line", sdk)
	}
	var req strings.Builder
	var out bytes.Buffer
	for _, m := range goSDKModules {
		version := ""
		sc := bufio.NewScanner(bytes.NewReader(mod))
		for sc.Scan() {
			f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
			if len(f) >= 2 && f[0] == m {
				version = f[1]
			}
		}
		if version == "" {
			return "", "", nil, fmt.Errorf("--sdk %s: go.mod does not require %s", sdk, m)
		}
		fmt.Fprintf(&req, "\t%s %s // indirect\n", m, version)
		sc = bufio.NewScanner(bytes.NewReader(gosum))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 3 && f[0] == m && strings.TrimSuffix(f[1], "/go.mod") == version {
				out.WriteString(sc.Text() + "\n")
			}
		}
	}
	return goVersion, req.String(), out.Bytes(), nil
}
