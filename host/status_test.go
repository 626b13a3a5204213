package host_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/aiodhq/aiod/host"
)

// TestStatusWired: a started host serves GET /v2/sandbox with its
// version, workspace and the five planes, and /v1/capabilities carries
// the same planes beside its families; the browser plane is the host's
// own (its mode is reported).
func TestStatusWired(t *testing.T) {
	ws := t.TempDir()
	url := startHost(t, host.Config{Workspace: ws})
	resp, err := http.Get(url + "/v2/sandbox")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb struct {
		Version      string                    `json:"version"`
		WorkspaceDir string                    `json:"workspace_dir"`
		Identity     map[string]any            `json:"identity"`
		Capabilities map[string]map[string]any `json:"capabilities"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sb); err != nil {
		t.Fatal(err)
	}
	if sb.Version != host.Version || sb.WorkspaceDir != ws || sb.Identity["name"] != "aiod" || len(sb.Capabilities) != 5 {
		t.Fatalf("/v2/sandbox: %+v", sb)
	}
	if _, ok := sb.Capabilities["browser"]["mode"]; !ok {
		t.Errorf("browser plane is not the host's own: %v", sb.Capabilities["browser"])
	}
	var body struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	getCapabilities(t, url, &body)
	for _, k := range []string{"families", "mcp", "files", "exec", "code_interpreter", "browser", "computer"} {
		if body.Data[k] == nil {
			t.Errorf("/v1/capabilities lacks %s", k)
		}
	}
}
