package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aiodhq/aiod/cmd/aiod/internal/author"
	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/aoi"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/plugins/builtin"
)

const pluginUsage = `usage:
  aiod plugin new NAME [--lang go|c|rust|assemblyscript] [--dir DIR] [--sdk AIOD_TREE]
                       a new plugin project (one tool, a build script, examples.json, a README)
  aiod plugin build [DIR] [--into PLUGINS_DIR] [--lang L] [--work DIR] [--cache-dir DIR]
                       compile the project and pack it into a plugin package
  aiod plugin inspect FILE.wasm|PACKAGE_DIR [--json] [--output jsonl]
                       ABI version, form, tools and schemas, capabilities, limits, imports, size, digest
  aiod plugin verify PACKAGE_DIR [--policy FILE] [--json] [--output jsonl]
                       what the policy grants and refuses, and why
  aiod plugin test DIR [--args FILE] [--engine E] [--cache-dir DIR] [--json] [--output jsonl]
                       call each tool of examples.json (or --args) on every engine, print the answers
  aiod plugin add FILE.wasm --form extism --into PLUGINS_DIR [--allow-http HOST] [--name N]
                       pack an Extism plugin as it is (manifest from its tool list, pinned by sha256)
  aiod plugin add oci://REGISTRY/REPO@sha256:... --into PLUGINS_DIR [--key PUB]
                       install a package from an OCI registry, by digest
  aiod plugin push PACKAGE_DIR REGISTRY/REPO[:TAG]
                       push a package as an OCI artifact; prints its reference by digest
  aiod plugin pull REGISTRY/REPO[:TAG|@sha256:...] [--into DIR] [--key PUB] [--force]
                       pull a package (and its signatures) into DIR/<name>
  aiod plugin sign REGISTRY/REPO[:TAG|@sha256:...] --key KEY
                       sign a pushed package (a cosign signature, pushed beside it)
  aiod plugin keygen --out PREFIX
                       a P-256 key pair for signing: PREFIX.key and PREFIX.pub
`

// pluginCmd is `aiod plugin SUBCOMMAND`. Exit 0: done; 1: a failure (or
// verify: the host would refuse the package; test: an answer differs
// from its expectation); 2: usage.
func pluginCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	ctx := context.Background()
	sub, rest := args[0], args[1:]
	var err error
	code := 0
	switch sub {
	case "new":
		err = pluginNew(rest, stdout, stderr)
	case "build":
		err = pluginBuild(ctx, rest, stdout, stderr)
	case "inspect", "verify", "test":
		if jsonl(rest) {
			return pluginMachine(ctx, sub, rest, stdout, stderr)
		}
		code, err = pluginCheck(ctx, sub, rest, nil, stdout, stderr)
	case "add":
		if !hasOCIArg(rest) {
			return pluginAddTo(rest, stdout, stderr)
		}
		err = pluginAddOCI(ctx, rest, stdout, stderr)
	case "push":
		err = pluginPush(ctx, rest, stdout, stderr)
	case "pull":
		err = pluginPull(ctx, rest, stdout, stderr)
	case "sign":
		err = pluginSign(ctx, rest, stdout, stderr)
	case "keygen":
		err = pluginKeygen(rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, pluginUsage)
		return 0
	default:
		fmt.Fprintf(stderr, "aiod plugin: unknown subcommand %q\n%s", sub, pluginUsage)
		return 2
	}
	var ue usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "aiod plugin %s: %v\n%s", sub, err, pluginUsage)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "aiod plugin %s: %v\n", sub, err)
		return 1
	}
	return code
}

type usageError struct{ error }

// hasOCIArg reports whether an argument is an oci:// reference.
func hasOCIArg(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "oci://") {
			return true
		}
	}
	return false
}

// pluginCheck runs inspect, verify or test; with s (--output jsonl) they
// write their events on it and finish it.
func pluginCheck(ctx context.Context, sub string, args []string, s *aoi.Stream, stdout, stderr io.Writer) (int, error) {
	switch sub {
	case "inspect":
		return pluginInspect(ctx, args, s, stdout, stderr)
	case "verify":
		return pluginVerify(ctx, args, s, stdout, stderr)
	}
	return pluginTest(ctx, args, s, stdout, stderr)
}

// pluginMachine is inspect, verify or test in Machine Mode: only JSONL on
// stdout, every failure an error event before the summary.
func pluginMachine(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) int {
	s := startStream(stdout, "plugin "+sub)
	code, err := pluginCheck(ctx, sub, args, s, stdout, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return s.Finish(true, nil)
	case err != nil:
		return abort(s, err, aoi.CategoryValidation, "PLUGIN_UNREADABLE")
	}
	return code
}

// parseArgs parses flags placed before, between or after the positional
// arguments, and checks their count.
func parseArgs(fs *flag.FlagSet, args []string, min, max int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) < min || len(pos) > max {
		return nil, usageError{fmt.Errorf("expected %d to %d arguments, got %d", min, max, len(pos))}
	}
	return pos, nil
}

func flagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("aiod plugin "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func pluginNew(args []string, stdout, stderr io.Writer) error {
	fs := flagSet("new", stderr)
	lang := fs.String("lang", "go", "language: go, c, rust or assemblyscript")
	dir := fs.String("dir", "", "project directory (default: ./NAME)")
	sdk := fs.String("sdk", os.Getenv("AIOD_SDK"), "Go only: the aiod source tree whose sdk/ the project uses (env AIOD_SDK; default: the tree this aiod was built in, when found)")
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return err
	}
	l, err := author.ParseLang(*lang)
	if err != nil {
		return usageError{err}
	}
	name := pos[0]
	if *dir == "" {
		*dir = name
	}
	if l == author.Go && *sdk == "" {
		*sdk = findTree()
	}
	files, err := author.New(name, *dir, author.NewOptions{Lang: l, GoSDK: *sdk})
	if err != nil {
		return err
	}
	sort.Strings(files)
	fmt.Fprintf(stdout, "created %s (%s): %s\nnext: aiod plugin build %s --into PLUGINS_DIR\n", *dir, l, strings.Join(files, ", "), *dir)
	return nil
}

// findTree returns the aiod source tree this binary sits in (bin/aiod) or
// the working directory is in, or "".
func findTree() string {
	var starts []string
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			starts = append(starts, filepath.Dir(exe))
		}
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, d := range starts {
		for {
			if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/aiodhq/aiod\n")) {
				return d
			}
			up := filepath.Dir(d)
			if up == d {
				break
			}
			d = up
		}
	}
	return ""
}

func pluginBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("build", stderr)
	into := fs.String("into", "", "install the package as PLUGINS_DIR/<name> (default: DIR/build/<name>)")
	lang := fs.String("lang", "", "language (default: from the entry source file)")
	cacheDir := fs.String("cache-dir", "", "also compile into this compilation cache (as aiod start --cache-dir)")
	work := fs.String("work", "", "compile the module in this directory (default: DIR/build)")
	pos, err := parseArgs(fs, args, 0, 1)
	if err != nil {
		return err
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	o := author.BuildOptions{Into: *into, Scratch: *work, Pack: host.PackOptions{CacheDir: *cacheDir}}
	if *lang != "" {
		if o.Lang, err = author.ParseLang(*lang); err != nil {
			return usageError{err}
		}
	}
	b, err := author.Build(ctx, dir, o)
	if err != nil {
		return err
	}
	for _, s := range b.Steps {
		fmt.Fprintf(stdout, "%8s  %s\n", s.Duration.Round(time.Millisecond), s.Command)
	}
	m, err := caps.ParseManifest(b.Package.Manifest)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "built %s %s (%s, %d bytes, %d tools) into %s\n", m.Name, m.Version, b.Lang, len(b.Package.Wasm), len(m.Tools), b.PackageDir)
	return nil
}

func pluginInspect(ctx context.Context, args []string, s *aoi.Stream, stdout, stderr io.Writer) (int, error) {
	fs := flagSet("inspect", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	output := outputFlag(fs)
	pos, err := parseArgs(fs, args, 1, 1)
	if err == nil {
		err = checkOutput(*output)
	}
	if err != nil {
		return 0, err
	}
	r, err := author.Inspect(ctx, pos[0], host.PackOptions{})
	if err != nil {
		return 0, err
	}
	switch {
	case s != nil:
		s.Event("module", r)
		for _, p := range r.Problems {
			s.Warning("PROBLEM", p)
		}
		return s.Finish(true, map[string]any{"problems": len(r.Problems)}), nil
	case *asJSON:
		return 0, writeJSON(stdout, r)
	}
	printReport(stdout, r)
	return 0, nil
}

func printReport(w io.Writer, r *author.Report) {
	fmt.Fprintf(w, "module    %s\nsize      %d bytes\nsha256    %s\n", r.Module, r.Size, r.SHA256)
	if r.Pinned != "" {
		state := "matches"
		if r.DigestOK != nil && !*r.DigestOK {
			state = "DOES NOT MATCH"
		}
		fmt.Fprintf(w, "pinned    %s (%s)\n", r.Pinned, state)
	}
	form := r.Form
	if r.Declared != "" && r.Declared != r.Form {
		form += " (manifest: " + r.Declared + ")"
	}
	fmt.Fprintf(w, "form      %s\n", form)
	if m := r.Manifest; m != nil {
		fmt.Fprintf(w, "plugin    %s %s, abi %d\n", m.Name, m.Version, m.ABI)
		if m.Description != "" {
			fmt.Fprintf(w, "          %s\n", m.Description)
		}
		fmt.Fprintf(w, "tools     %d\n", len(m.Tools))
		for _, t := range m.Tools {
			fmt.Fprintf(w, "  %s: %s\n    input  %s\n", t.Name, t.Description, compact(t.InputSchema))
			if len(t.OutputSchema) > 0 {
				fmt.Fprintf(w, "    output %s\n", compact(t.OutputSchema))
			}
		}
		c, _ := json.Marshal(m.Capabilities)
		l, _ := json.Marshal(m.Limits)
		fmt.Fprintf(w, "capabilities %s\nlimits    %s\n", c, l)
	}
	fmt.Fprintf(w, "imports   %d\n", len(r.Imports))
	for _, im := range r.Imports {
		fmt.Fprintf(w, "  %s.%s (%s)\n", im.Module, im.Name, im.Kind)
	}
	var ex []string
	for _, e := range r.Exports {
		ex = append(ex, e.Name)
	}
	fmt.Fprintf(w, "exports   %s\n", strings.Join(ex, ", "))
	for _, p := range r.Problems {
		fmt.Fprintf(w, "problem   %s\n", p)
	}
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func pluginVerify(ctx context.Context, args []string, s *aoi.Stream, stdout, stderr io.Writer) (int, error) {
	fs := flagSet("verify", stderr)
	policyFile := fs.String("policy", "", "operator policy file (default: none, deny by default)")
	workspace := fs.String("workspace", "", "the workspace $SANDBOX and $WORKSPACE resolve to, as aiod start --workspace")
	asJSON := fs.Bool("json", false, "print JSON")
	output := outputFlag(fs)
	pos, err := parseArgs(fs, args, 1, 1)
	if err == nil {
		err = checkOutput(*output)
	}
	if err != nil {
		return 0, err
	}
	o := author.VerifyOptions{Builtins: builtin.FS()}
	if *policyFile != "" {
		data, err := os.ReadFile(*policyFile)
		if err != nil {
			return 0, err
		}
		if o.Policy, err = caps.ParsePolicy(data); err != nil {
			return 0, fmt.Errorf("policy %s: %w", *policyFile, err)
		}
		o.PolicyName = "policy " + *policyFile
	}
	if *workspace != "" {
		home, _ := os.UserHomeDir()
		o.Env = caps.Env{Home: home, Tmp: os.TempDir(), Workspace: *workspace}
	}
	v, err := author.Verify(ctx, pos[0], o)
	if err != nil {
		return 0, err
	}
	code := 0
	if !v.Loads {
		code = 1
	}
	if s != nil {
		if v.Families == nil {
			v.Families = []author.FamilyVerdict{}
		}
		for _, f := range v.Families {
			s.Check(string(f.Family), f.Granted, cmp.Or(f.Detail, f.Why), nil)
		}
		s.Event("verdict", v)
		if !v.Loads {
			e := aoi.Fail(aoi.CategoryAuthz, "PLUGIN_REFUSED", "the host would refuse plugin %s: %s", v.Plugin, strings.Join(v.Refused, "; "))
			e.Hint = "grant what it asks for in the policy, or drop what it does not need from its manifest"
			s.Error(e)
		}
		return s.Finish(v.Loads, map[string]any{"loads": v.Loads}), nil
	}
	if *asJSON {
		return code, writeJSON(stdout, v)
	}
	verdict := "loads"
	if !v.Loads {
		verdict = "REFUSED"
	}
	fmt.Fprintf(stdout, "plugin %s: %s\n", v.Plugin, verdict)
	for _, f := range v.Families {
		if f.Granted {
			fmt.Fprintf(stdout, "  grant   %-8s %s\n", f.Family, f.Detail)
		} else {
			fmt.Fprintf(stdout, "  refuse  %-8s %s\n", f.Family, f.Why)
		}
	}
	if v.SignedBy != "" {
		fmt.Fprintf(stdout, "  signed  by %s\n", v.SignedBy)
	}
	for _, r := range v.Refused {
		fmt.Fprintf(stdout, "  refused: %s\n", r)
	}
	for _, w := range v.Warnings {
		fmt.Fprintf(stdout, "  warning: %s\n", w)
	}
	l := v.Limits
	fmt.Fprintf(stdout, "  limits  timeout %d ms, memory %d MiB, result %d bytes, %d instances", l.TimeoutMs, l.MemoryMiB, l.MaxResultBytes, l.MaxInstances)
	if l.Fuel > 0 {
		fmt.Fprintf(stdout, ", fuel %d", l.Fuel)
	}
	fmt.Fprintln(stdout)
	return code, nil
}

func pluginTest(ctx context.Context, args []string, s *aoi.Stream, stdout, stderr io.Writer) (int, error) {
	fs := flagSet("test", stderr)
	argsFile := fs.String("args", "", "calls to make (default: DIR/examples.json): [{\"tool\", \"arguments\", \"expect\"}]")
	engine := fs.String("engine", "", fmt.Sprintf("run on this engine only (default: every one built in: %v)", host.Engines()))
	policyFile := fs.String("policy", "", "grant what this policy grants (default: what the manifest asks for)")
	cacheDir := fs.String("cache-dir", "", "compile through this compilation cache (as aiod start --cache-dir; default: in memory)")
	asJSON := fs.Bool("json", false, "print JSON")
	output := outputFlag(fs)
	pos, err := parseArgs(fs, args, 1, 1)
	if err == nil {
		err = checkOutput(*output)
	}
	if err != nil {
		return 0, err
	}
	dir := pos[0]
	pkg := dir
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		// A project: build it into a scratch package first.
		tmp, err := os.MkdirTemp("", "aiod-plugin-build-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(tmp)
		b, err := author.Build(ctx, dir, author.BuildOptions{Into: tmp})
		if err != nil {
			return 0, err
		}
		pkg = b.PackageDir
	}
	file := *argsFile
	if file == "" {
		file = filepath.Join(dir, author.ExamplesFile)
	}
	examples, err := author.ReadExamples(file)
	if err != nil {
		return 0, err
	}
	o := author.TestOptions{CacheDir: *cacheDir}
	if *engine != "" {
		o.Engines = []string{*engine}
	}
	if *policyFile != "" {
		data, err := os.ReadFile(*policyFile)
		if err != nil {
			return 0, err
		}
		if o.Policy, err = caps.ParsePolicy(data); err != nil {
			return 0, fmt.Errorf("policy %s: %w", *policyFile, err)
		}
	}
	answers, err := author.RunExamples(ctx, pkg, examples, o)
	if err != nil {
		return 0, err
	}
	failed := 0
	for _, a := range answers {
		if a.Failed != "" {
			failed++
		}
	}
	if s != nil {
		for _, a := range answers {
			s.Event("answer", a)
		}
		if failed > 0 {
			s.Error(aoi.Fail(aoi.CategoryValidation, "ANSWERS_DIFFER", "%d of %d answers differ from their expectation", failed, len(answers)))
		}
		return s.Finish(failed == 0, map[string]any{"failed": failed}), nil
	}
	if *asJSON {
		if err := writeJSON(stdout, answers); err != nil {
			return 0, err
		}
	} else {
		for _, a := range answers {
			mark := "ok  "
			if a.Failed != "" {
				mark = "FAIL"
			}
			fmt.Fprintf(stdout, "%s %-8s %s %s -> %s (%s)\n", mark, a.Engine, a.Tool, compact(a.Args), a.Result, a.Duration.Round(time.Microsecond))
			if a.Failed != "" {
				fmt.Fprintf(stdout, "     %s\n", a.Failed)
			}
		}
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "aiod plugin test: %d of %d answers differ from their expectation\n", failed, len(answers))
		return 1, nil
	}
	return 0, nil
}
