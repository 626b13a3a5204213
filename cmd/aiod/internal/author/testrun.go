package author

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/sdk/abi"
)

// ExamplesFile is the file in a project that lists calls for `aiod plugin
// test`: a JSON array of {"tool", "arguments", "expect"}.
const ExamplesFile = "examples.json"

// Example is one call: a tool, its arguments, and optionally the text the
// first content block must have (Expect) or that it must be an error.
type Example struct {
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Expect      *string         `json:"expect,omitempty"`
	ExpectError bool            `json:"expect_error,omitempty"`
}

// ReadExamples reads an examples file.
func ReadExamples(file string) ([]Example, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var ex []Example
	if err := caps.StrictUnmarshal(data, &ex); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for i, e := range ex {
		if e.Tool == "" {
			return nil, fmt.Errorf("%s: example %d has no tool", file, i)
		}
		if len(e.Arguments) == 0 {
			ex[i].Arguments = json.RawMessage("{}")
		}
	}
	return ex, nil
}

// Answer is one example's result on one engine.
type Answer struct {
	Engine   string          `json:"engine"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"arguments"`
	Result   json.RawMessage `json:"result"`
	Text     string          `json:"text"`
	IsError  bool            `json:"isError"`
	Duration time.Duration   `json:"duration_ns"`
	// Failed says why the answer is not the expected one ("" when it is,
	// or when nothing was expected).
	Failed string `json:"failed,omitempty"`
}

// TestOptions configure RunExamples.
type TestOptions struct {
	// Engines to run on; empty is every engine this binary has.
	Engines []string
	// Policy grants the plugin; nil grants exactly what its manifest asks.
	Policy   *caps.Policy
	CacheDir string // "" compiles in memory
	Logger   *slog.Logger
}

// RunExamples loads the package in pkgDir into a host of its own per
// engine (nothing else loaded, no built-ins) and calls each example.
func RunExamples(ctx context.Context, pkgDir string, examples []Example, o TestOptions) ([]Answer, error) {
	mb, err := os.ReadFile(filepath.Join(pkgDir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	m, err := caps.ParseManifest(mb)
	if err != nil {
		return nil, err
	}
	policy := o.Policy
	if policy == nil {
		policy = &caps.Policy{Plugins: map[string]abi.Capabilities{m.Name: m.Capabilities}}
	}
	pj, err := json.Marshal(policy)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "aiod-plugin-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	plugins := filepath.Join(tmp, "plugins")
	if err := os.CopyFS(filepath.Join(plugins, m.Name), os.DirFS(pkgDir)); err != nil {
		return nil, err
	}
	pf := filepath.Join(tmp, "policy.json")
	if err := os.WriteFile(pf, pj, 0o600); err != nil {
		return nil, err
	}
	engines := o.Engines
	if len(engines) == 0 {
		engines = host.Engines()
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cache := o.CacheDir
	if cache == "" {
		cache = "-"
	}
	var out []Answer
	for _, e := range engines {
		a, err := runOn(ctx, e, plugins, pf, cache, log, examples)
		if err != nil {
			return out, fmt.Errorf("engine %s: %w", e, err)
		}
		out = append(out, a...)
	}
	return out, nil
}

func runOn(ctx context.Context, engine, plugins, policy, cache string, log *slog.Logger, examples []Example) ([]Answer, error) {
	h, err := host.New(ctx, host.Config{PluginsDir: plugins, PolicyFile: policy, CacheDir: cache, Engine: engine,
		Browser: browser.Config{Mode: browser.Off}, Logger: log})
	if err != nil {
		return nil, err
	}
	defer h.Close(context.WithoutCancel(ctx))
	reg := h.Registry()
	if err := reg.WaitLoaded(ctx); err != nil {
		return nil, err
	}
	var out []Answer
	for _, ex := range examples {
		began := time.Now()
		res, err := reg.CallTool(ctx, plugin.CallRequest{Name: ex.Tool, Args: ex.Arguments})
		if err != nil {
			return out, fmt.Errorf("tool %s: %w", ex.Tool, err)
		}
		a := Answer{Engine: engine, Tool: ex.Tool, Args: ex.Arguments, Result: res, Duration: time.Since(began)}
		var r struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return out, fmt.Errorf("tool %s: result: %w", ex.Tool, err)
		}
		if len(r.Content) > 0 {
			a.Text = r.Content[0].Text
		}
		a.IsError = r.IsError
		switch {
		case a.IsError != ex.ExpectError:
			a.Failed = fmt.Sprintf("isError %v, expected %v", a.IsError, ex.ExpectError)
		case ex.Expect != nil && *ex.Expect != a.Text:
			a.Failed = fmt.Sprintf("text %q, expected %q", a.Text, *ex.Expect)
		}
		out = append(out, a)
	}
	return out, nil
}
