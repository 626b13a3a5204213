package sandboxtest

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fileOps = "sandbox_file_operations"

// fo calls sandbox_file_operations and decodes its JSON text.
func fo(t *testing.T, s *server, args map[string]any) (map[string]any, bool) {
	t.Helper()
	r := s.call(t, fileOps, args)
	return r.Object(t), r.IsError
}

// wantOK fails unless the call succeeded.
func wantOK(t *testing.T, m map[string]any, isErr bool) {
	t.Helper()
	if isErr || m["success"] != true {
		t.Fatalf("want success, got isError=%v %s", isErr, fmtJSON(m))
	}
}

// wantFail checks a failure {action, error: msg, path, success:false}.
func wantFail(t *testing.T, m map[string]any, isErr bool, msg string) {
	t.Helper()
	if !isErr || m["success"] != false || m["error"] != msg {
		t.Fatalf("want failure %q, got isError=%v %s", msg, isErr, fmtJSON(m))
	}
}

// wantFileErr checks a structured file error of error_type typ whose
// message starts with prefix.
func wantFileErr(t *testing.T, m map[string]any, isErr bool, typ, prefix string) {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if !isErr || m["success"] != false || e == nil || e["error_type"] != typ ||
		!strings.HasPrefix(e["message"].(string), prefix) || m["message"] != e["message"] {
		t.Fatalf("want %s error %q..., got isError=%v %s", typ, prefix, isErr, fmtJSON(m))
	}
	for _, k := range []string{"errno", "errno_name", "error_type", "exception_type", "message", "operation", "path", "retryable"} {
		if _, ok := e[k]; !ok {
			t.Errorf("structured error lacks %s: %s", k, fmtJSON(e))
		}
	}
}

func TestFileRead(t *testing.T) {
	defaultEngine(t, "the file tool's answers: the plugin's logic over aiod:files")
	s := sharedServer(t, "")
	d := tmpDir(t)
	writeFile(t, d+"/a.txt", "l0\nl1\nl2\nl3\n")
	must(t, os.WriteFile(d+"/bin", []byte{0xff, 0x00, 0xfe, 'x'}, 0o644))

	m, e := fo(t, s, map[string]any{"action": "read", "path": d + "/a.txt"})
	wantOK(t, m, e)
	if m["content"] != "l0\nl1\nl2\nl3\n" || m["action"] != "read" || m["path"] != d+"/a.txt" || len(m) != 4 {
		t.Errorf("read: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "read", "path": d + "/a.txt", "start_line": 1, "end_line": 3})
	wantOK(t, m, e)
	if m["content"] != "l1\nl2\n" {
		t.Errorf("line range: %q", m["content"])
	}
	m, e = fo(t, s, map[string]any{"action": "read", "path": d + "/a.txt", "start_line": 3})
	if wantOK(t, m, e); m["content"] != "l3\n" {
		t.Errorf("start_line only: %q", m["content"])
	}
	m, e = fo(t, s, map[string]any{"action": "read", "path": d + "/bin", "encoding": "base64"})
	if wantOK(t, m, e); m["content"] != base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0xfe, 'x'}) {
		t.Errorf("base64: %q", m["content"])
	}
	m, e = fo(t, s, map[string]any{"action": "read", "path": d + "/bin", "encoding": "raw"})
	if wantOK(t, m, e); m["content"] != "\u00ff\u0000\u00fex" {
		t.Errorf("raw: %q", m["content"])
	}
	m, e = fo(t, s, map[string]any{"action": "read", "path": d + "/bin"})
	wantFileErr(t, m, e, "decode_error", "Failed to read file: stream did not contain valid UTF-8")
	if m["error"].(map[string]any)["exception_type"] != "UnicodeDecodeError" {
		t.Errorf("decode error: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "read", "path": d + "/missing"})
	wantFileErr(t, m, e, "not_found", "Failed to read file: No such file or directory (os error 2)")
	m, e = fo(t, s, map[string]any{"action": "read", "path": d})
	wantFileErr(t, m, e, "invalid_path", "Failed to read file: Is a directory (os error 21)")
	m, e = fo(t, s, map[string]any{"action": "read", "path": d + "/a.txt", "encoding": "latin-9"})
	wantFail(t, m, e, "Unsupported encoding: latin-9. Supported encodings: utf-8, base64, raw")
	m, e = fo(t, s, map[string]any{"action": "read", "path": "relative.txt"})
	wantFileErr(t, m, e, "invalid_path", "Failed to read file: path must be absolute")
	m, e = fo(t, s, map[string]any{"action": "read", "path": "/etc/passwd"})
	wantFileErr(t, m, e, "permission_denied", "Failed to read file: /etc/passwd is outside the plugin's granted roots")
	m, e = fo(t, s, map[string]any{"action": "read", "path": ""})
	wantFileErr(t, m, e, "invalid_path", "Failed to read file: path is required")
}

func TestFileWrite(t *testing.T) {
	defaultEngine(t, "the file tool's answers: the plugin's logic over aiod:files")
	s := sharedServer(t, "")
	d := tmpDir(t)
	p := d + "/new/sub/w.txt"
	m, e := fo(t, s, map[string]any{"action": "write", "path": p, "content": "héllo\n"})
	wantOK(t, m, e)
	if m["bytes_written"] != float64(7) || readFile(t, p) != "héllo\n" {
		t.Errorf("write: %s %q", fmtJSON(m), readFile(t, p))
	}
	m, e = fo(t, s, map[string]any{"action": "write", "path": p, "content": "more", "append": true})
	if wantOK(t, m, e); readFile(t, p) != "héllo\nmore" || m["bytes_written"] != float64(4) {
		t.Errorf("append: %q", readFile(t, p))
	}
	m, e = fo(t, s, map[string]any{"action": "write", "path": d + "/b64", "content": base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff}), "encoding": "base64"})
	if wantOK(t, m, e); readFile(t, d+"/b64") != "\x00\x01\x02\xff" {
		t.Errorf("base64 write: %q", readFile(t, d+"/b64"))
	}
	m, e = fo(t, s, map[string]any{"action": "write", "path": d + "/raw", "content": "\u00ff\u0001a", "encoding": "raw"})
	if wantOK(t, m, e); readFile(t, d+"/raw") != "\xff\x01a" || m["bytes_written"] != float64(3) {
		t.Errorf("raw write: %q", readFile(t, d+"/raw"))
	}
	m, e = fo(t, s, map[string]any{"action": "write", "path": d + "/raw2", "content": "€", "encoding": "raw"})
	wantFail(t, m, e, "Invalid raw content: characters above U+00FF cannot be written as single bytes")
	m, e = fo(t, s, map[string]any{"action": "write", "path": d + "/x", "content": "!!", "encoding": "base64"})
	if !e || !strings.HasPrefix(m["error"].(string), "Invalid base64 content: ") {
		t.Errorf("bad base64: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "write", "path": d + "/x"})
	wantFail(t, m, e, "Content is required for write operation")
	m, e = fo(t, s, map[string]any{"action": "write", "path": d + "/empty", "content": ""})
	if wantOK(t, m, e); m["bytes_written"] != float64(0) {
		t.Errorf("empty write: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "write", "path": d, "content": "x"})
	wantFileErr(t, m, e, "invalid_path", "Failed to write file: Is a directory (os error 21)")
	m, e = fo(t, s, map[string]any{"action": "write", "path": "/etc/aiod-test", "content": "x"})
	wantFileErr(t, m, e, "permission_denied", "Failed to write file: /etc/aiod-test is outside")
}

func TestFileReplaceSearch(t *testing.T) {
	defaultEngine(t, "the file tool's answers: the plugin's logic over aiod:files")
	s := sharedServer(t, "")
	d := tmpDir(t)
	p := d + "/r.txt"
	writeFile(t, p, "ERROR: failed\nINFO: success\nerror: timeout\nINFO: done\n")
	m, e := fo(t, s, map[string]any{"action": "replace", "path": p, "content": "INFO", "target": "NOTE"})
	if wantOK(t, m, e); m["replaced_count"] != float64(2) || !strings.Contains(readFile(t, p), "NOTE: success\n") {
		t.Errorf("replace: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "replace", "path": p, "content": "absent", "target": "x"})
	if wantOK(t, m, e); m["replaced_count"] != float64(0) {
		t.Errorf("replace none: %s", fmtJSON(m))
	}
	const both = "Both content (old_str) and target (new_str) are required for replace operation"
	m, e = fo(t, s, map[string]any{"action": "replace", "path": p, "content": "x"})
	wantFail(t, m, e, both)
	m, e = fo(t, s, map[string]any{"action": "replace", "path": p, "target": "x"})
	wantFail(t, m, e, both)
	m, e = fo(t, s, map[string]any{"action": "replace", "path": d + "/nope", "content": "a", "target": "b"})
	wantFileErr(t, m, e, "not_found", "Failed to read file")

	m, e = fo(t, s, map[string]any{"action": "search", "path": p, "content": "^ERROR"})
	wantOK(t, m, e)
	if m["match_count"] != float64(1) || fmtJSON(m["line_numbers"]) != "[0]" || fmtJSON(m["matches"]) != `["ERROR: failed"]` {
		t.Errorf("search: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "search", "path": p, "content": "error", "case_insensitive": true})
	if wantOK(t, m, e); fmtJSON(m["line_numbers"]) != "[0,2]" {
		t.Errorf("search -i: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "search", "path": p, "content": "zzz"})
	if wantOK(t, m, e); fmtJSON(m["matches"]) != "[]" || m["match_count"] != float64(0) {
		t.Errorf("search none: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "search", "path": p})
	wantFail(t, m, e, "Content (regex pattern) is required for search operation")
	m, e = fo(t, s, map[string]any{"action": "search", "path": p, "content": "("})
	if !e || !strings.HasPrefix(m["error"].(string), "Invalid regex pattern: ") {
		t.Errorf("bad regex: %s", fmtJSON(m))
	}
}

// tree makes a small project under d.
func tree(t *testing.T, d string) {
	writeFile(t, d+"/main.py", "def main():\n    print('argv')\n")
	writeFile(t, d+"/README.md", "# demo\nargv here\n")
	writeFile(t, d+"/src/util.py", "import sys\nx = sys.argv\n")
	writeFile(t, d+"/src/deep/more.py", "ARGV = 1\n")
	writeFile(t, d+"/node_modules/m/index.js", "argv\n")
	writeFile(t, d+"/.hidden/secret.py", "argv\n")
	writeFile(t, d+"/.env", "argv=1\n")
	must(t, os.WriteFile(d+"/blob.bin", []byte("argv\x00\x01"), 0o644))
	big := strings.Repeat("argv\n", (1<<20)/5+10)
	writeFile(t, d+"/big.txt", big)
	must(t, os.Symlink("src", d+"/srclink"))
}

func TestFileFind(t *testing.T) {
	defaultEngine(t, "the file tool's answers: the plugin's logic over aiod:files")
	s := sharedServer(t, "")
	d := tmpDir(t)
	tree(t, d)
	m, e := fo(t, s, map[string]any{"action": "find", "path": d, "pattern": "*.py"})
	wantOK(t, m, e)
	want := []string{d + "/main.py", d + "/src/deep/more.py", d + "/src/util.py"}
	if fmtJSON(m["files"]) != fmtJSON(want) || m["file_count"] != float64(3) || m["truncated"] != false {
		t.Errorf("find: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "find", "path": d, "pattern": "*.py", "show_hidden": true})
	if wantOK(t, m, e); m["file_count"] != float64(4) {
		t.Errorf("find hidden: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "find", "path": d, "pattern": ".env"})
	if wantOK(t, m, e); fmtJSON(m["files"]) != fmtJSON([]string{d + "/.env"}) {
		t.Errorf("find .env: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "find", "path": d, "pattern": "src/*.py"})
	if wantOK(t, m, e); fmtJSON(m["files"]) != fmtJSON([]string{d + "/src/util.py"}) {
		t.Errorf("find src/*.py: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "find", "path": d})
	wantFail(t, m, e, "Pattern is required for find operation")
	m, e = fo(t, s, map[string]any{"action": "find", "path": d, "pattern": "[a"})
	wantFail(t, m, e, "Invalid glob pattern: [a")
	m, e = fo(t, s, map[string]any{"action": "find", "path": d + "/main.py", "pattern": "*"})
	wantFileErr(t, m, e, "invalid_path", "Failed to walk directory: Not a directory")
}

func TestFileList(t *testing.T) {
	defaultEngine(t, "the file tool's answers: the plugin's logic over aiod:files")
	s := sharedServer(t, "")
	d := tmpDir(t)
	tree(t, d)
	m, e := fo(t, s, map[string]any{"action": "list", "path": d})
	wantOK(t, m, e)
	var names []string
	for _, f := range m["files"].([]any) {
		fm := f.(map[string]any)
		names = append(names, fm["name"].(string))
		for _, k := range []string{"name", "path", "is_directory", "size", "extension", "modified_time"} {
			if _, ok := fm[k]; !ok {
				t.Errorf("entry lacks %s: %s", k, fmtJSON(fm))
			}
		}
		switch fm["name"] {
		case "main.py":
			if fm["extension"] != ".py" || fm["is_directory"] != false || fm["size"] != float64(30) || fm["path"] != d+"/main.py" {
				t.Errorf("main.py: %s", fmtJSON(fm))
			}
		case "src", "srclink":
			if fm["is_directory"] != true || fm["extension"] != nil {
				t.Errorf("%s: %s", fm["name"], fmtJSON(fm))
			}
		}
	}
	if strings.Join(names, ",") != "README.md,big.txt,blob.bin,main.py,node_modules,src,srclink" {
		t.Errorf("list names: %v", names)
	}
	if m["total_count"] != float64(7) || m["directory_count"] != float64(3) || m["file_count"] != float64(4) || m["truncated"] != false {
		t.Errorf("list counts: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "list", "path": d, "show_hidden": true})
	if wantOK(t, m, e); m["total_count"] != float64(9) {
		t.Errorf("list hidden: %s", fmtJSON(m))
	}
	for _, f := range m["files"].([]any) {
		fm := f.(map[string]any)
		if strings.HasPrefix(fm["name"].(string), ".") != (fm["is_hidden"] == true) {
			t.Errorf("is_hidden: %s", fmtJSON(fm))
		}
	}
	m, e = fo(t, s, map[string]any{"action": "list", "path": d, "recursive": true, "file_types": []string{".py"}})
	wantOK(t, m, e)
	var paths []string
	for _, f := range m["files"].([]any) {
		fm := f.(map[string]any)
		if fm["is_directory"] == false {
			paths = append(paths, strings.TrimPrefix(fm["path"].(string), d+"/"))
		}
	}
	if strings.Join(paths, ",") != "main.py,src/deep/more.py,src/util.py" {
		t.Errorf("recursive .py: %v", paths)
	}
	m, e = fo(t, s, map[string]any{"action": "list", "path": d + "/main.py"})
	wantFileErr(t, m, e, "invalid_path", "Failed to list directory: Not a directory")
	m, e = fo(t, s, map[string]any{"action": "list", "path": d + "/none"})
	wantFileErr(t, m, e, "not_found", "Failed to list directory: No such file or directory")
}

func TestFileGrep(t *testing.T) {
	defaultEngine(t, "the file tool's answers: the plugin's logic over aiod:files")
	s := sharedServer(t, "")
	d := tmpDir(t)
	tree(t, d)
	m, e := fo(t, s, map[string]any{"action": "grep", "path": d, "pattern": "argv"})
	wantOK(t, m, e)
	var got []string
	for _, x := range m["matches"].([]any) {
		xm := x.(map[string]any)
		got = append(got, strings.TrimPrefix(xm["file"].(string), d+"/")+":"+fmtJSON(xm["line_number"])+":"+xm["line_content"].(string))
		if _, ok := xm["context_before"]; ok {
			t.Errorf("context without asking: %s", fmtJSON(xm))
		}
	}
	// Hidden files, binary files and files over 1 MiB are skipped;
	// symbolic links are not followed.
	want := "README.md:2:argv here,main.py:2:    print('argv'),node_modules/m/index.js:1:argv,src/util.py:2:x = sys.argv"
	if strings.Join(got, ",") != want {
		t.Errorf("grep:\n got %s\nwant %s", strings.Join(got, ","), want)
	}
	if m["match_count"] != float64(4) || m["files_matched"] != float64(4) || m["truncated"] != false || m["files_searched"] != float64(5) {
		t.Errorf("grep counts: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "grep", "path": d, "pattern": "ARGV", "case_insensitive": true,
		"include": []string{"*.py"}, "exclude": []string{"node_modules"}, "context_before": 1, "context_after": 1})
	wantOK(t, m, e)
	if m["match_count"] != float64(3) {
		t.Errorf("grep -i include: %s", fmtJSON(m))
	}
	first := m["matches"].([]any)[0].(map[string]any)
	if fmtJSON(first["context_before"]) != `["def main():"]` || fmtJSON(first["context_after"]) != `[]` {
		t.Errorf("context: %s", fmtJSON(first))
	}
	m, e = fo(t, s, map[string]any{"action": "grep", "path": d, "pattern": "argv", "max_results": 2})
	if wantOK(t, m, e); m["match_count"] != float64(2) || m["truncated"] != true {
		t.Errorf("grep max_results: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "grep", "path": d + "/main.py", "pattern": "print(", "fixed_strings": true})
	if wantOK(t, m, e); m["match_count"] != float64(1) {
		t.Errorf("grep fixed on a file: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "grep", "path": d})
	wantFail(t, m, e, "Pattern is required for grep operation")
	m, e = fo(t, s, map[string]any{"action": "grep", "path": d, "pattern": "(?<=x)"})
	if !e || !strings.HasPrefix(m["error"].(string), "Invalid regex pattern: ") {
		t.Errorf("grep bad regex: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "grep", "path": d + "/nothing", "pattern": "x"})
	wantFileErr(t, m, e, "not_found", "Failed to get file metadata: No such file or directory")
}

func TestFileGlob(t *testing.T) {
	defaultEngine(t, "the file tool's answers: the plugin's logic over aiod:files")
	s := sharedServer(t, "")
	d := tmpDir(t)
	tree(t, d)
	m, e := fo(t, s, map[string]any{"action": "glob", "path": d, "pattern": "**/*.py"})
	wantOK(t, m, e)
	var got []string
	for _, x := range m["files"].([]any) {
		xm := x.(map[string]any)
		got = append(got, strings.TrimPrefix(xm["path"].(string), d+"/"))
		if xm["size"] == nil || xm["modified_time"] == nil || xm["name"] != filepath.Base(xm["path"].(string)) {
			t.Errorf("glob entry: %s", fmtJSON(xm))
		}
	}
	if strings.Join(got, ",") != "main.py,src/deep/more.py,src/util.py" || m["total_count"] != float64(3) || m["truncated"] != false {
		t.Errorf("glob: %v %s", got, fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "glob", "path": d, "pattern": "src/*", "files_only": false, "include_metadata": false})
	wantOK(t, m, e)
	if fmtJSON(m["files"]) != fmtJSON([]map[string]any{
		{"is_directory": true, "modified_time": nil, "name": "deep", "path": d + "/src/deep", "size": nil},
		{"is_directory": false, "modified_time": nil, "name": "util.py", "path": d + "/src/util.py", "size": nil},
	}) {
		t.Errorf("glob dirs no metadata: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "glob", "path": d, "pattern": "**/*", "max_results": 2})
	if wantOK(t, m, e); m["total_count"] != float64(2) || m["truncated"] != true {
		t.Errorf("glob max_results: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "glob", "path": d, "pattern": d + "/*.md"})
	if wantOK(t, m, e); m["total_count"] != float64(1) {
		t.Errorf("absolute glob: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "glob", "path": d, "pattern": "nosuchdir/*.py"})
	if wantOK(t, m, e); m["total_count"] != float64(0) {
		t.Errorf("glob missing prefix: %s", fmtJSON(m))
	}
	m, e = fo(t, s, map[string]any{"action": "glob", "path": d})
	wantFail(t, m, e, "Pattern is required for glob operation")
	m, e = fo(t, s, map[string]any{"action": "glob", "path": d, "pattern": "/elsewhere/*"})
	wantFail(t, m, e, "Invalid glob pattern: an absolute pattern must lie below path")
}

func TestFileUnsupportedAction(t *testing.T) {
	defaultEngine(t, "the file tool's argument errors: the plugin's logic")
	s := sharedServer(t, "")
	m, e := fo(t, s, map[string]any{"action": "delete", "path": "/tmp/x"})
	wantFail(t, m, e, "Unsupported action: delete")
	if len(m) != 4 || m["action"] != "delete" || m["path"] != "/tmp/x" {
		t.Errorf("shape: %s", fmtJSON(m))
	}
}
