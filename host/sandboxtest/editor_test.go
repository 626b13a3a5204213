package sandboxtest

import (
	"os"
	"strings"
	"testing"
)

const editorTool = "sandbox_str_replace_editor"

// ed calls the editor and decodes its JSON text.
func ed(t *testing.T, s *server, args map[string]any) (map[string]any, bool) {
	t.Helper()
	r := s.call(t, editorTool, args)
	return r.Object(t), r.IsError
}

func edOK(t *testing.T, m map[string]any, isErr bool) {
	t.Helper()
	if isErr || m["success"] != true || m["error"] != nil {
		t.Fatalf("want success, got isError=%v %s", isErr, fmtJSON(m))
	}
	for _, k := range []string{"command", "path", "output", "error", "prev_exist", "old_content", "new_content", "success"} {
		if _, ok := m[k]; !ok {
			t.Errorf("result lacks %s: %s", k, fmtJSON(m))
		}
	}
}

func edFail(t *testing.T, m map[string]any, isErr bool, msg string) {
	t.Helper()
	if !isErr || m["success"] != false || m["error"] != msg {
		t.Fatalf("want error %q, got isError=%v %s", msg, isErr, fmtJSON(m))
	}
}

func TestEditorView(t *testing.T) {
	defaultEngine(t, "the editor's output: the plugin's logic")
	s := sharedServer(t, "")
	d := tmpDir(t)
	p := d + "/v.txt"
	writeFile(t, p, "Line 1\nLine 2\nLine 3\nLine 4\nLine 5")
	m, e := ed(t, s, map[string]any{"command": "view", "path": p})
	edOK(t, m, e)
	want := "Here's the result of running `cat -n` on " + p + ":\n     1\tLine 1\n     2\tLine 2\n     3\tLine 3\n     4\tLine 4\n     5\tLine 5\n"
	if m["output"] != want || m["prev_exist"] != true {
		t.Errorf("view:\n%q\nwant\n%q", m["output"], want)
	}
	m, e = ed(t, s, map[string]any{"command": "view", "path": p, "view_range": []int{2, 3}})
	if edOK(t, m, e); m["output"] != "Here's the result of running `cat -n` on "+p+":\n     2\tLine 2\n     3\tLine 3\n" {
		t.Errorf("view_range: %q", m["output"])
	}
	m, e = ed(t, s, map[string]any{"command": "view", "path": p, "view_range": []int{4, -1}})
	if edOK(t, m, e); !strings.HasSuffix(m["output"].(string), "     4\tLine 4\n     5\tLine 5\n") {
		t.Errorf("view_range -1: %q", m["output"])
	}
	m, e = ed(t, s, map[string]any{"command": "view", "path": p, "view_range": []int{0, 2}})
	edFail(t, m, e, "Invalid `view_range` parameter: [0, 2]. Its first element `0` should be within the range of lines of the file: [1, 5].")
	m, e = ed(t, s, map[string]any{"command": "view", "path": p, "view_range": []int{3, 2}})
	edFail(t, m, e, "Invalid `view_range` parameter: [3, 2]. Its second element `2` should be greater than or equal to the first element `3`.")
	m, e = ed(t, s, map[string]any{"command": "view", "path": p, "view_range": []int{1}})
	edFail(t, m, e, "Invalid `view_range` parameter: [1]. It should be a list of two integers.")

	writeFile(t, d+"/dir/a.py", "x\n")
	writeFile(t, d+"/dir/sub/b.py", "x\n")
	writeFile(t, d+"/dir/sub/deeper/c.py", "x\n")
	writeFile(t, d+"/dir/.git/config", "x\n")
	m, e = ed(t, s, map[string]any{"command": "view", "path": d + "/dir"})
	edOK(t, m, e)
	want = "Here's the files and directories up to 2 levels deep in " + d + "/dir, excluding hidden items:\n" +
		d + "/dir/\n" + d + "/dir/a.py\n" + d + "/dir/sub/\n" + d + "/dir/sub/b.py\n" + d + "/dir/sub/deeper/\n\n" +
		"1 hidden files/directories in this directory are excluded. You can use 'ls -la " + d + "/dir' to see them."
	if m["output"] != want {
		t.Errorf("view dir:\n%s\nwant\n%s", m["output"], want)
	}
	m, e = ed(t, s, map[string]any{"command": "view", "path": d + "/dir", "view_range": []int{1, 2}})
	edFail(t, m, e, "Invalid `view_range` parameter: [1, 2]. The `view_range` parameter is not allowed when `path` points to a directory.")

	must(t, os.WriteFile(d+"/bin", []byte("a\x00b"), 0o644))
	m, e = ed(t, s, map[string]any{"command": "view", "path": d + "/bin"})
	edFail(t, m, e, "File validation failed for "+d+"/bin: File appears to be binary and this file type cannot be read or edited by this tool.")
	must(t, os.WriteFile(d+"/latin", []byte("caf\xe9\n"), 0o644))
	m, e = ed(t, s, map[string]any{"command": "view", "path": d + "/latin"})
	edFail(t, m, e, "The editor only supports UTF-8 encoding files, please use bash commands for files with other encoding: "+d+"/latin")
	m, e = ed(t, s, map[string]any{"command": "view", "path": d + "/none"})
	edFail(t, m, e, "Invalid `path` parameter: "+d+"/none. The path "+d+"/none does not exist. Please provide a valid path.")
	m, e = ed(t, s, map[string]any{"command": "view", "path": "rel/x"})
	edFail(t, m, e, "Invalid `path` parameter: rel/x. The path should be an absolute path, starting with `/`.")
	m, e = ed(t, s, map[string]any{"command": "fly", "path": p})
	edFail(t, m, e, "Unrecognized command fly. The allowed commands for the sandbox_str_replace_editor tool are: view, create, str_replace, insert, undo_edit")
}

func TestEditorEdits(t *testing.T) {
	defaultEngine(t, "the editor's edits: the plugin's logic")
	s := sharedServer(t, "")
	d := tmpDir(t)
	p := d + "/e.py"

	// create
	m, e := ed(t, s, map[string]any{"command": "create", "path": p, "file_text": "def old_func():\n    pass\n\ndef other():\n    return 1\n"})
	edOK(t, m, e)
	if m["output"] != "File created successfully at: "+p || m["prev_exist"] != false || m["old_content"] != nil {
		t.Errorf("create: %s", fmtJSON(m))
	}
	m, e = ed(t, s, map[string]any{"command": "create", "path": p, "file_text": "x"})
	edFail(t, m, e, "Invalid `path` parameter: "+p+". File already exists at: "+p+". Cannot overwrite files using command `create`.")
	m, e = ed(t, s, map[string]any{"command": "create", "path": d + "/n.txt"})
	edFail(t, m, e, "Parameter `file_text` is required for command: create.")
	m, e = ed(t, s, map[string]any{"command": "create", "path": d + "/made/on/demand.txt", "file_text": ""})
	if edOK(t, m, e); readFile(t, d+"/made/on/demand.txt") != "" {
		t.Error("create with parents")
	}

	// str_replace
	m, e = ed(t, s, map[string]any{"command": "str_replace", "path": p, "old_str": "def old_func():\n    pass", "new_str": "def new_func():\n    return 42"})
	edOK(t, m, e)
	if readFile(t, p) != "def new_func():\n    return 42\n\ndef other():\n    return 1\n" {
		t.Errorf("str_replace: %q", readFile(t, p))
	}
	wantOut := "The file " + p + " has been edited. Here's the result of running `cat -n` on a snippet of " + p + ":\n" +
		"     1\tdef new_func():\n     2\t    return 42\n     3\t\n     4\tdef other():\n     5\t    return 1\n     6\t\n" +
		"Review the changes and make sure they are as expected. Edit the file again if necessary."
	if m["output"] != wantOut || m["old_content"] != "def old_func():\n    pass\n\ndef other():\n    return 1\n" {
		t.Errorf("str_replace output:\n%q\nwant\n%q", m["output"], wantOut)
	}
	m, e = ed(t, s, map[string]any{"command": "str_replace", "path": p, "old_str": "absent", "new_str": "x"})
	edFail(t, m, e, "old_str not found in file")
	m, e = ed(t, s, map[string]any{"command": "str_replace", "path": p, "old_str": "return", "new_str": "yield"})
	edFail(t, m, e, "old_str has multiple occurrences; replace_mode is required")
	m, e = ed(t, s, map[string]any{"command": "str_replace", "path": p, "old_str": "return", "new_str": "yield", "replace_mode": "LAST"})
	if edOK(t, m, e); readFile(t, p) != "def new_func():\n    return 42\n\ndef other():\n    yield 1\n" {
		t.Errorf("LAST: %q", readFile(t, p))
	}
	m, e = ed(t, s, map[string]any{"command": "str_replace", "path": p, "old_str": "def", "new_str": "async def", "replace_mode": "ALL"})
	if edOK(t, m, e); strings.Count(readFile(t, p), "async def") != 2 {
		t.Errorf("ALL: %q", readFile(t, p))
	}
	m, e = ed(t, s, map[string]any{"command": "str_replace", "path": p, "old_str": "async ", "new_str": "", "replace_mode": "FIRST"})
	if edOK(t, m, e); strings.Count(readFile(t, p), "async def") != 1 {
		t.Errorf("FIRST: %q", readFile(t, p))
	}
	m, e = ed(t, s, map[string]any{"command": "str_replace", "path": p, "old_str": "x", "new_str": "y", "replace_mode": "SOME"})
	edFail(t, m, e, "Invalid `replace_mode` parameter: SOME. It should be one of ALL, FIRST, LAST.")
	m, e = ed(t, s, map[string]any{"command": "str_replace", "path": p, "new_str": "y"})
	edFail(t, m, e, "Parameter `old_str` is required for command: str_replace.")
	m, e = ed(t, s, map[string]any{"command": "str_replace", "path": p, "old_str": "same", "new_str": "same"})
	edFail(t, m, e, "Invalid `new_str` parameter: same. No replacement was performed. `new_str` and `old_str` must be different.")
	m, e = ed(t, s, map[string]any{"command": "str_replace", "path": d, "old_str": "a", "new_str": "b"})
	edFail(t, m, e, "Invalid `path` parameter: "+d+". The path "+d+" is a directory and only the `view` command can be used on directories.")

	// insert
	q := d + "/ins.txt"
	writeFile(t, q, "Line 1\nLine 2\nLine 3")
	m, e = ed(t, s, map[string]any{"command": "insert", "path": q, "insert_line": 1, "new_str": "Inserted Line"})
	edOK(t, m, e)
	if readFile(t, q) != "Line 1\nInserted Line\nLine 2\nLine 3" {
		t.Errorf("insert: %q", readFile(t, q))
	}
	if !strings.HasPrefix(m["output"].(string), "The file "+q+" has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n     1\tLine 1\n     2\tInserted Line\n") ||
		!strings.HasSuffix(m["output"].(string), "Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.") {
		t.Errorf("insert output: %q", m["output"])
	}
	m, e = ed(t, s, map[string]any{"command": "insert", "path": q, "insert_line": 0, "new_str": "Top"})
	if edOK(t, m, e); !strings.HasPrefix(readFile(t, q), "Top\nLine 1\n") {
		t.Errorf("insert 0: %q", readFile(t, q))
	}
	m, e = ed(t, s, map[string]any{"command": "insert", "path": q, "insert_line": 9, "new_str": "x"})
	edFail(t, m, e, "Invalid `insert_line` parameter: 9. It should be within the range of allowed values: [0, 5]")
	m, e = ed(t, s, map[string]any{"command": "insert", "path": q, "new_str": "x"})
	edFail(t, m, e, "Parameter `insert_line` is required for command: insert.")
	m, e = ed(t, s, map[string]any{"command": "insert", "path": q, "insert_line": 1})
	edFail(t, m, e, "Parameter `new_str` is required for command: insert.")
}

func TestEditorUndo(t *testing.T) {
	defaultEngine(t, "the editor's undo: the plugin's logic")
	s := sharedServer(t, "")
	d := tmpDir(t)
	p := d + "/multi_undo.txt"
	m, e := ed(t, s, map[string]any{"command": "create", "path": p, "file_text": "Version 1"})
	edOK(t, m, e)
	for _, v := range []string{"2", "3", "4"} {
		prev := readFile(t, p)
		m, e = ed(t, s, map[string]any{"command": "str_replace", "path": p, "old_str": prev, "new_str": "Version " + v})
		edOK(t, m, e)
	}
	for _, want := range []string{"Version 3", "Version 2"} {
		m, e = ed(t, s, map[string]any{"command": "undo_edit", "path": p})
		edOK(t, m, e)
		if readFile(t, p) != want || m["new_content"] != want {
			t.Fatalf("undo: file %q, result %s", readFile(t, p), fmtJSON(m))
		}
		if !strings.HasPrefix(m["output"].(string), "Last edit to "+p+" undone successfully. Here's the result of running `cat -n` on "+p+":\n     1\t"+want) {
			t.Errorf("undo output: %q", m["output"])
		}
	}
	// Two more undos: back to Version 1, then the create itself is undone.
	m, e = ed(t, s, map[string]any{"command": "undo_edit", "path": p})
	if edOK(t, m, e); readFile(t, p) != "Version 1" {
		t.Fatalf("undo 3: %q", readFile(t, p))
	}
	m, e = ed(t, s, map[string]any{"command": "undo_edit", "path": p})
	edOK(t, m, e)
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("undoing the create left the file: %v", err)
	}
	if m["output"] != "Last edit to "+p+" undone successfully. The file was created by that edit and has been removed." {
		t.Errorf("undo create output: %q", m["output"])
	}
	m, e = ed(t, s, map[string]any{"command": "undo_edit", "path": p})
	edFail(t, m, e, "Invalid `path` parameter: "+p+". The path "+p+" does not exist. Please provide a valid path.")
	q := d + "/plain.txt"
	writeFile(t, q, "untouched")
	m, e = ed(t, s, map[string]any{"command": "undo_edit", "path": q})
	edFail(t, m, e, "No edit history found for "+q+".")

	// The history lives in the host's state, not the instance: it
	// survives concurrent editors using other pooled instances.
	r := d + "/conc.txt"
	m, e = ed(t, s, map[string]any{"command": "create", "path": r, "file_text": "a"})
	edOK(t, m, e)
	done := make(chan struct{})
	for i := 0; i < 4; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			s.call(t, editorTool, map[string]any{"command": "view", "path": r})
		}()
	}
	for i := 0; i < 4; i++ {
		<-done
	}
	m, e = ed(t, s, map[string]any{"command": "str_replace", "path": r, "old_str": "a", "new_str": "b"})
	edOK(t, m, e)
	m, e = ed(t, s, map[string]any{"command": "undo_edit", "path": r})
	if edOK(t, m, e); readFile(t, r) != "a" {
		t.Errorf("undo after concurrency: %q", readFile(t, r))
	}
}
