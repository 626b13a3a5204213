//go:build !wasip1

package files_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/files"
	"github.com/aiodhq/aiod/sdk/sdktest"
)

type readArgs struct {
	Path string `json:"path"`
	Kept bool   `json:"kept"`
}

// A tool answering a file's content twice (text and structuredContent),
// from a kept files.Text or from bytes it read itself, beside a string
// that looks like a kept response's marker.
func init() {
	sdk.Plugin(sdk.Info{Name: "texttest", Version: "1.0.0"})
	sdk.AddTool(sdk.Tool{Name: "read", InputSchema: `{"type":"object"}`}, func(_ *sdk.Ctx, a readArgs) (*sdk.Result, error) {
		var content any
		if a.Kept {
			t, err := files.ReadText(a.Path, nil)
			if err != nil {
				return nil, err
			}
			content = t
		} else {
			b, err := files.Read(a.Path, nil)
			if err != nil {
				return nil, err
			}
			content = string(b)
		}
		return sdk.JSONResult(map[string]any{"content": content, "again": content, "marker": "\x0010\x00\x0020\x00", "path": a.Path}, false), nil
	})
}

func TestReadTextAnswersAsRead(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := sdktest.New(t, sdktest.WithFiles(sdktest.FilePath{Path: dir}))
	for name, content := range map[string]string{
		"empty":   "",
		"text":    "l0\nl1\n",
		"escapes": "\"q\" \\ \t\r\x00\x01 \x0010\x00 <&> \u2028 é🙂",
		"invalid": "bad \xff\xfe \xe2\x82",
		"large":   string(bytes.Repeat([]byte("abcdefghij\n"), 20000)),
	} {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		kept := h.CallTool("read", map[string]any{"path": p, "kept": true})
		read := h.CallTool("read", map[string]any{"path": p})
		if read.IsError || !bytes.Equal(kept.Raw, read.Raw) {
			t.Errorf("%s: kept answer differs:\n kept %.300q\n read %.300q", name, kept.Raw, read.Raw)
		}
	}
}
