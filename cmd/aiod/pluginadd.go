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
	return 0
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
