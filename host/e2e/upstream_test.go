package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// toolsList is the names of a server's tools/list, in order.
func toolsList(t *testing.T, url string) []string {
	t.Helper()
	resp, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	var r struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &r) != nil || len(r.Result.Tools) == 0 {
		t.Fatalf("tools/list of %s: %d %s", url, resp.StatusCode, body)
	}
	names := make([]string, len(r.Result.Tools))
	for i, tl := range r.Result.Tools {
		names[i] = tl.Name
	}
	return names
}

// callTool calls a tool and returns its result's text and isError, failing
// on a JSON-RPC error.
func callTool(t *testing.T, url, name, args string) (string, bool) {
	t.Helper()
	resp, body := post(t, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, name, args), nil)
	var r struct {
		Result *struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &r) != nil || r.Result == nil {
		t.Fatalf("tools/call %s: %d %s, want a result", name, resp.StatusCode, body)
	}
	var text []string
	for _, c := range r.Result.Content {
		text = append(text, c.Text)
	}
	return strings.Join(text, "\n"), r.Result.IsError
}

// TestSeedAggregation is seed 000's transcript ("Aggregating another MCP
// server") between real processes: a second aiod with the first as "peer"
// and a dead port as "gone" lists its own tools, then peer_<tool> for each
// tool of the first in its order, and nothing for gone;
// peer_sandbox_execute_bash answers hello; gone_hello answers isError.
// Beside the seed: an entry without a prefix ("sandbox", the first again)
// publishes nothing (its sandbox_* names are the built-ins', the others do
// not start with "sandbox_"), and an upstream that starts after the second
// ("late") appears at the next tools/list.
func TestSeedAggregation(t *testing.T) {
	first := start(t, nil)
	gone := "http://127.0.0.1:" + freePort(t) + "/mcp"
	latePort := freePort(t)
	servers := fmt.Sprintf(`{"peer":{"url":%q,"prefix":"peer"},"gone":{"url":%q,"prefix":"gone"},"sandbox":{"url":%q},"late":{"url":"http://127.0.0.1:%s/mcp","prefix":"late"}}`,
		first.URL, gone, first.URL, latePort)
	second := start(t, []string{"EXTRA_MCP_SERVERS=" + servers})

	own := toolsList(t, first.URL)
	if !slices.Contains(own, "sandbox_execute_bash") {
		t.Fatalf("the first aiod has no sandbox_execute_bash: %v", own)
	}
	want := slices.Clone(own) // the second has the same built-ins and plugins
	for _, n := range own {
		want = append(want, "peer_"+n)
	}
	got := toolsList(t, second.URL)
	if !slices.Equal(got, want) {
		t.Fatalf("tools/list of the second aiod:\n got  %v\n want %v", got, want)
	}
	if again := toolsList(t, second.URL); !slices.Equal(again, got) {
		t.Fatalf("tools/list changed from one call to the next:\n%v\n%v", got, again)
	}

	if text, isErr := callTool(t, second.URL, "peer_sandbox_execute_bash", `{"cmd":"echo hello","cwd":"/tmp"}`); isErr || !strings.Contains(text, "hello") {
		t.Fatalf("peer_sandbox_execute_bash: isError %v, %q, want hello", isErr, text)
	}
	if text, isErr := callTool(t, second.URL, "gone_hello", `{}`); !isErr || !strings.Contains(text, `"gone"`) {
		t.Fatalf("gone_hello: isError %v, %q, want isError naming \"gone\"", isErr, text)
	}
	if !strings.Contains(second.Logs(), `tool \"sandbox_execute_bash\" collides with a built-in tool`) {
		t.Errorf("no log line for the dropped sandbox_execute_bash of \"sandbox\":\n%s", second.Logs())
	}

	start(t, nil, "--port", latePort)
	got = toolsList(t, second.URL)
	var late []string
	for _, n := range own {
		late = append(late, "late_"+n)
	}
	if !slices.Equal(got, append(slices.Clone(want), late...)) {
		t.Fatalf("after \"late\" started, tools/list:\n got  %v\n want %v then late_<tool> for each", got, want)
	}
	if text, isErr := callTool(t, second.URL, "late_echo", `{"text":"on time"}`); isErr || text != "on time" {
		t.Fatalf("late_echo: isError %v, %q", isErr, text)
	}
}
