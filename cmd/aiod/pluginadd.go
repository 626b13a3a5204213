package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime/wazero"
	"github.com/aiodhq/aiod/sdk/abi"
)

// pluginAdd is `aiod plugin add FILE.wasm --form extism --into PLUGINS_DIR`:
// it packs an existing module as it is into a plugin package
// (PLUGINS_DIR/NAME/plugin.wasm and manifest.json). The manifest is
// generated from the module's own tool list (one call of list_tools, or
// describe, in the host, with HTTP refused) and pins the module by sha256.
func pluginAdd(args []string) int { return pluginAddTo(args, os.Stdout, os.Stderr) }

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

var pkgNameRE = regexp.MustCompile(`[^a-z0-9_-]+`)

func pluginAddTo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("aiod plugin add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	form := fs.String("form", "", `the module's form; "extism" (an unchanged Extism plugin) is the one this command packs`)
	into := fs.String("into", "", "plugins directory to install the package into (aiod start --plugins-dir)")
	name := fs.String("name", "", "plugin name (default: the file's name, lowercased)")
	version := fs.String("version", "0.0.0", "plugin version written to the manifest")
	force := fs.Bool("force", false, "replace a package of that name already in the directory")
	cacheDir := fs.String("cache-dir", os.Getenv("AIO_CACHE_DIR"), "compiled-module cache, shared with aiod start so that it starts warm; '-' disables it (default: <user cache dir>/aiod/wazero)")
	var hosts, config listFlag
	fs.Var(&hosts, "allow-http", "host name (or pattern like *.example.com) the plugin asks to send HTTP requests to; repeatable (the operator's policy still decides)")
	fs.Var(&config, "config", "KEY=VALUE the plugin reads with config_get; repeatable")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: aiod plugin add FILE.wasm --form extism --into PLUGINS_DIR [flags]")
		fs.PrintDefaults()
	}
	// the file may come before or after the flags
	var files []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) != 1 || *into == "" {
		fs.Usage()
		return 2
	}
	if *form != abi.FormExtism {
		fmt.Fprintf(stderr, "aiod plugin add: --form %q: only \"extism\" is packed as it is (build an aiod plugin with `aiod plugin build`)\n", *form)
		return 2
	}
	file := files[0]
	n := *name
	if n == "" {
		n = pkgNameRE.ReplaceAllString(strings.ToLower(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))), "-")
		n = strings.Trim(n, "-_")
	}
	want := abi.Capabilities{}
	if len(hosts) > 0 {
		want.HTTP = &abi.HTTPScope{Hosts: hosts}
	}
	cfg := map[string]string{}
	for _, kv := range config {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			fmt.Fprintf(stderr, "aiod plugin add: --config %q: want KEY=VALUE\n", kv)
			return 2
		}
		cfg[k] = v
	}
	if *cacheDir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			*cacheDir = filepath.Join(d, "aiod", "wazero")
		}
	}
	if *cacheDir == "-" {
		*cacheDir = ""
	}
	dir, m, err := addExtism(context.Background(), file, *into, n, *version, want, cfg, *force, *cacheDir)
	if err != nil {
		fmt.Fprintf(stderr, "aiod plugin add: %v\n", err)
		return 1
	}
	names := make([]string, len(m.Tools))
	for i, t := range m.Tools {
		names[i] = t.Name
	}
	fmt.Fprintf(stdout, "added %s: %d tools (%s), form extism, sha256 %s, in %s\n", m.Name, len(m.Tools), strings.Join(names, ", "), m.SHA256, dir)
	if len(hosts) == 0 && slices.Contains(wasmImports(mustRead(file)), "extism:host/env.http_request") {
		fmt.Fprintf(stdout, "note: the module imports http_request; without --allow-http HOST (and the operator's grant) its requests fail\n")
	}
	return 0
}

func mustRead(file string) []byte {
	b, _ := os.ReadFile(file)
	return b
}

// addExtism describes the module at file and writes its package into
// into/name, atomically: the package appears whole or not at all.
func addExtism(ctx context.Context, file, into, name, version string, want abi.Capabilities, cfg map[string]string, force bool, cacheDir string) (string, *abi.Manifest, error) {
	wasm, err := os.ReadFile(file)
	if err != nil {
		return "", nil, err
	}
	eng, err := wazero.New(wazero.Options{CacheDir: cacheDir})
	if err != nil {
		return "", nil, err
	}
	defer eng.Close(ctx)
	m, _, err := plugin.DescribeExtism(ctx, eng, wasm, name, want)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", file, err)
	}
	m.Version = version
	if len(cfg) > 0 {
		m.Config = cfg
	}
	if err := caps.ValidateManifest(m); err != nil {
		return "", nil, err
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", nil, err
	}
	manifest = append(manifest, '\n')
	if err := os.MkdirAll(into, 0o755); err != nil {
		return "", nil, err
	}
	dst := filepath.Join(into, name)
	if _, err := os.Lstat(dst); err == nil && !force {
		return "", nil, fmt.Errorf("%s exists (--force replaces it)", dst)
	}
	// staged beside the target under a dot name, which the registry skips
	tmp, err := os.MkdirTemp(into, "."+name+".add-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "plugin.wasm"), wasm, 0o644); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "manifest.json"), manifest, 0o644); err != nil {
		return "", nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", nil, err
	}
	if force {
		old := tmp + ".old"
		if err := os.Rename(dst, old); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", nil, err
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", nil, err
	}
	return dst, m, nil
}

// wasmImports lists a module's function imports as "module.name" (the
// import section only; nil if the module does not parse).
func wasmImports(b []byte) []string {
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return nil
	}
	p := 8
	uleb := func() (uint64, bool) {
		var v uint64
		for shift := 0; p < len(b) && shift < 64; shift += 7 {
			c := b[p]
			p++
			v |= uint64(c&0x7f) << shift
			if c&0x80 == 0 {
				return v, true
			}
		}
		return 0, false
	}
	name := func() (string, bool) {
		n, ok := uleb()
		if !ok || uint64(len(b)-p) < n {
			return "", false
		}
		s := string(b[p : p+int(n)])
		p += int(n)
		return s, true
	}
	for p < len(b) {
		id := b[p]
		p++
		size, ok := uleb()
		if !ok || uint64(len(b)-p) < size {
			return nil
		}
		end := p + int(size)
		if id != 2 { // not the import section
			p = end
			continue
		}
		count, ok := uleb()
		if !ok {
			return nil
		}
		var out []string
		for i := uint64(0); i < count && p < end; i++ {
			mod, ok1 := name()
			fn, ok2 := name()
			if !ok1 || !ok2 || p >= end {
				return out
			}
			kind := b[p]
			p++
			switch kind {
			case 0: // function: a type index
				out = append(out, mod+"."+fn)
				uleb()
			case 1: // table: reftype, limits
				p++
				fallthrough
			case 2: // memory: limits
				flags := b[p]
				p++
				uleb()
				if flags&1 != 0 {
					uleb()
				}
			case 3: // global: valtype, mutability
				p += 2
			default:
				return out
			}
		}
		return out
	}
	return nil
}
