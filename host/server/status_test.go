package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aiodhq/aiod/host/doctor"
)

// TestStatusRoutes: GET /v2/sandbox and the per-domain part of GET
// /v1/capabilities come from the doctor's probes (cached; ?refresh=true
// probes again), beside what the host reports itself, which wins a
// clash.
func TestStatusRoutes(t *testing.T) {
	var probes atomic.Int32
	d := doctor.New(doctor.Options{
		LookPath: func(n string) (string, error) {
			if n == "bash" {
				probes.Add(1)
				return "/bin/bash", nil
			}
			return "", errors.New("not found")
		},
		CDP: "127.0.0.1:1",
	}, 0)
	addr := serve(t, New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Capabilities: func() any { return map[string]any{"families": map[string]any{}, "browser": "the host's own"} },
		Status: &Status{Doctor: d, Identity: map[string]any{"name": "aiod"}, Version: "9.9.9", WorkspaceDir: "/ws",
			Browser: func(context.Context) any {
				return map[string]any{"status": "ready", "missing": []string{}, "warnings": []string{}}
			}},
	}))
	get := func(path string, v any) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	type domain struct {
		Status   string   `json:"status"`
		Missing  []string `json:"missing"`
		Warnings []string `json:"warnings"`
	}
	var sb struct {
		Identity     map[string]any    `json:"identity"`
		Version      string            `json:"version"`
		WorkspaceDir string            `json:"workspace_dir"`
		Capabilities map[string]domain `json:"capabilities"`
	}
	get("/v2/sandbox", &sb)
	if sb.Version != "9.9.9" || sb.WorkspaceDir != "/ws" || sb.Identity["name"] != "aiod" || len(sb.Capabilities) != 5 ||
		sb.Capabilities["exec"].Status == "absent" || sb.Capabilities["code_interpreter"].Status != "absent" ||
		sb.Capabilities["browser"].Status != "ready" || sb.Capabilities["computer"].Missing[0] != "computer-use" {
		t.Fatalf("/v2/sandbox: %+v", sb)
	}
	var caps struct {
		Success bool                       `json:"success"`
		Data    map[string]json.RawMessage `json:"data"`
	}
	get("/v1/capabilities", &caps)
	var files, browser any
	json.Unmarshal(caps.Data["files"], &files)
	json.Unmarshal(caps.Data["browser"], &browser)
	if !caps.Success || caps.Data["families"] == nil || files == nil || browser != "the host's own" || caps.Data["code_interpreter"] == nil {
		t.Fatalf("/v1/capabilities: %v", caps.Data)
	}
	if probes.Load() != 1 {
		t.Fatalf("%d probes for two requests within the cache's life, want 1", probes.Load())
	}
	get("/v1/capabilities?refresh=true", &caps)
	if probes.Load() != 2 {
		t.Fatalf("refresh=true: %d probes, want 2", probes.Load())
	}
}

// TestNoStatus: without a Status neither route part exists.
func TestNoStatus(t *testing.T) {
	addr := serve(t, New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	resp, err := http.Get("http://" + addr + "/v2/sandbox")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/v2/sandbox without a Status: %d", resp.StatusCode)
	}
}
