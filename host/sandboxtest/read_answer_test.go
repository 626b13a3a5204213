package sandboxtest

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// nativeReadAnswer is the JSON-RPC answer to a sandbox_file_operations
// read of content, encoded independently of aiod as a native Go server
// would write it (encoding/json without HTML escaping, keys sorted): the
// answer the native-read peer gives, which aiod must match byte for byte.
func nativeReadAnswer(t *testing.T, id int, path, content string) []byte {
	t.Helper()
	enc := func(v any) []byte {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		must(t, e.Encode(v))
		return bytes.TrimRight(b.Bytes(), "\n")
	}
	text := enc(struct {
		Action  string `json:"action"`
		Content string `json:"content"`
		Path    string `json:"path"`
		Success bool   `json:"success"`
	}{"read", content, path, true})
	var out []byte
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, enc(id)...)
	out = append(out, `,"result":{"content":[{"type":"text","text":`...)
	out = append(out, enc(string(text))...)
	out = append(out, `}],"structuredContent":`...)
	out = append(out, text...)
	return append(out, `,"isError":false}}`...)
}

// TestFileReadAnswerBytes: the content of a read reaches the answer
// without entering the plugin (files.ReadText; the host escapes it once
// for structuredContent and once more for the text block), and the
// answer is byte-identical to a natively encoded one, for content that
// exercises every escape. (U+2028 and U+2029 are left out: aiod writes
// them as they are, as serde_json does, encoding/json as \u2028.)
func TestFileReadAnswerBytes(t *testing.T) {
	defaultEngine(t, "the file tool's answer bytes: the plugin's logic over aiod:files")
	s := sharedServer(t, "")
	d := tmpDir(t)
	line := strings.Repeat("abcdefghij", 9) + "\n"
	for name, content := range map[string]string{
		"empty":   "",
		"escapes": "\"q\" \\ \t\r\n\x00\x01\x1f\x7f \x0010\x00 <&> é漢🙂 \ufffd",
		"1mib":    strings.Repeat(line, (1<<20)/len(line)+1)[:1<<20],
	} {
		p := d + "/" + name
		must(t, os.WriteFile(p, []byte(content), 0o644))
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
			"params": map[string]any{"name": fileOps, "arguments": map[string]any{"action": "read", "path": p}}})
		status, out := s.post(t, body)
		if want := nativeReadAnswer(t, 7, p, content); status != 200 || !bytes.Equal(out, want) {
			i := 0
			for i < len(out) && i < len(want) && out[i] == want[i] {
				i++
			}
			t.Errorf("%s: status %d, answer differs at byte %d of %d (want %d):\n got  %.200q\n want %.200q",
				name, status, i, len(out), len(want), out[i:], want[min(i, len(want)):])
		}
	}
}
