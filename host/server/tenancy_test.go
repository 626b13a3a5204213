package server

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/aiodhq/aiod/host/mcp"
)

// TestSlotless: only a request whose body is tasks/get, tasks/update,
// tasks/cancel or subscriptions/listen skips the concurrency slot; the
// Mcp-Method header alone (which the legacy era does not check) never
// does.
func TestSlotless(t *testing.T) {
	app := fiber.New()
	app.Post("/", func(c *fiber.Ctx) error {
		if slotless(c) {
			return c.SendString("no slot")
		}
		return c.SendString("call")
	})
	for _, c := range []struct {
		header, body, want string
	}{
		{"tasks/get", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x"}}`, "no slot"},
		{"tasks/cancel", `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"taskId":"x"}}`, "no slot"},
		{"tasks/update", `{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{"taskId":"x","inputResponses":{}}}`, "no slot"},
		{"tasks/get", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_execute_bash"}}`, "call"}, // a lying header
		{"", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x"}}`, "call"},                            // no header: not the modern era
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, "call"},
		{"subscriptions/listen", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`, "no slot"},
		{"subscriptions/listen", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, "call"}, // a lying header
		{"", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}`, "call"},
		{"tasks/get", `[{"jsonrpc":"2.0","id":1,"method":"tasks/get"},{"jsonrpc":"2.0","id":2,"method":"tools/call"}]`, "call"}, // a batch
	} {
		req := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
		if c.header != "" {
			req.Header.Set("Mcp-Method", c.header)
		}
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != c.want {
			t.Errorf("header %q body %s: %s, want %s", c.header, c.body, b, c.want)
		}
	}
}

// TestHold: the Exchange.Hold the handler sets hands its release over once
// and leaves none behind, so the handler does not free the slot the task
// now holds.
func TestHold(t *testing.T) {
	n := 0
	m := &mcpRequest{release: func() { n++ }}
	var h mcp.Holder = m
	r := h.Hold()
	if m.release != nil {
		t.Fatal("the handler still holds the release")
	}
	r()
	if n != 1 {
		t.Fatalf("released %d times", n)
	}
	h.Hold()() // a second hold gets a no-op
	if n != 1 {
		t.Fatalf("released %d times after a second hold", n)
	}
}
