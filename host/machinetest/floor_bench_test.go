package machinetest

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// BenchmarkMachineModeFloor is the part of a Machine Mode call of 10,000
// events that no cut inside aiod can remove, against the direct run: the
// answer seed 002's mapping makes (structuredContent and the same JSON in
// a text block: 2.1 MB, captured from one call through aiod) sent by a
// bare Fiber app on loopback to the same client as BenchmarkMachineMode's
// (a legacy POST, the body read into a buffer of its Content-Length),
// alternating with the direct run of the same command. floor-ratio is
// (direct + the answer's transfer) / direct: what the call would take if
// the host's own work (the checks, the escaping, the plugin, the process
// family) cost nothing and overlapped nothing.
func BenchmarkMachineModeFloor(b *testing.B) {
	f := shared(b)
	_, docs := built(b)
	const n = 10000
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "docs_many", "arguments": map[string]any{"count": n}}})
	post := func(url string) []byte {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if resp.ContentLength > 0 {
			buf.Grow(int(resp.ContentLength) + 1)
		}
		_, _ = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return buf.Bytes()
	}
	answer := post(f.url)
	if !bytes.HasSuffix(answer, []byte(`"isError":false}}`)) || len(answer) < 2*n*60 {
		b.Fatalf("%d bytes: %.200s", len(answer), answer)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Post("/mcp", func(c *fiber.Ctx) error {
		c.Set("Content-Type", "application/json")
		return c.Send(answer)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go app.Listener(ln)
	defer app.Shutdown()
	url := "http://" + ln.Addr().String() + "/mcp"
	direct := func() {
		out, err := exec.Command(docs, "docs", "many", "--count="+strconv.Itoa(n), "--output", "jsonl").Output()
		if err != nil || len(out) < n*60 {
			b.Fatalf("%v: %d bytes", err, len(out))
		}
	}
	send := func() {
		if got := post(url); len(got) != len(answer) {
			b.Fatalf("%d bytes, want %d", len(got), len(answer))
		}
	}
	send()
	var wall [2][]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			j := (i + k) % 2
			t0 := time.Now()
			if j == 0 {
				direct()
			} else {
				send()
			}
			wall[j] = append(wall[j], time.Since(t0))
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2]) / 1e3
	}
	d, h := med(wall[0]), med(wall[1])
	b.ReportMetric(d, "direct-us")
	b.ReportMetric(h, "answer-us")
	b.ReportMetric(float64(len(answer)), "answer-bytes")
	b.ReportMetric((d+h)/d, "floor-ratio")
}
