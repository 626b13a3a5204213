// Command editor is the built-in plugin sandbox_str_replace_editor: the
// Anthropic/openhands-aci style text editor (view, create, str_replace,
// insert, undo_edit) over the aiod:files host functions, with its undo
// history in the aiod:state family so that it outlives a pooled instance.
// spec/sandbox-tools.md describes the tool.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/files"
)

// Args are the tool's arguments.
type Args struct {
	Command     string  `json:"command"`
	Path        string  `json:"path"`
	FileText    *string `json:"file_text"`
	OldStr      *string `json:"old_str"`
	NewStr      *string `json:"new_str"`
	InsertLine  *int    `json:"insert_line"`
	ViewRange   []int   `json:"view_range"`
	ReplaceMode *string `json:"replace_mode"`
}

// Name is the tool's (and the plugin's) name.
const Name = "sandbox_str_replace_editor"

// Description is the tool's description.
const Description = "Professional file editor tool, compatible with Anthropic's str_replace_editor interface. " +
	"Parameters and behavior match the standard interface.\n" +
	"* view: show a file with `cat -n` line numbers (view_range [start, end], 1-based, end -1 for the end of the file), or a directory's files up to 2 levels deep, excluding hidden items\n" +
	"* create: create a new file with file_text; fails if the path exists\n" +
	"* str_replace: replace old_str, which must match exactly once unless replace_mode is ALL, FIRST or LAST, with new_str\n" +
	"* insert: insert new_str AFTER line insert_line (0 inserts at the top)\n" +
	"* undo_edit: revert the last edit of the file (several levels; undoing a create removes the file)"

// InputSchema is the tool's input schema, keys sorted as aiod emits them.
const InputSchema = `{"properties":{` +
	`"command":{"description":"The commands to run. Allowed options are: ` + "`view`, `create`, `str_replace`, `insert`, `undo_edit`" + `.","enum":["view","create","str_replace","insert","undo_edit"],"type":"string"},` +
	`"file_text":{"description":"Required parameter of ` + "`create`" + ` command, with the content of the file to be created.","type":"string"},` +
	`"insert_line":{"description":"Required parameter of ` + "`insert`" + ` command. The ` + "`new_str`" + ` will be inserted AFTER the line ` + "`insert_line`" + ` of ` + "`path`" + `.","type":"integer"},` +
	`"new_str":{"description":"Optional parameter of ` + "`str_replace`" + ` command containing the new string (if not given, no string will be added). Required parameter of ` + "`insert`" + ` command containing the string to insert.","type":"string"},` +
	`"old_str":{"description":"Required parameter of ` + "`str_replace`" + ` command containing the string in ` + "`path`" + ` to replace.","type":"string"},` +
	`"path":{"description":"Absolute path to file or directory, e.g. ` + "`/workspace/file.py` or `/workspace`" + `.","type":"string"},` +
	`"replace_mode":{"description":"Optional parameter of ` + "`str_replace`" + ` command. When specified, controls how multiple occurrences are handled: 'ALL' replaces all occurrences, 'FIRST' replaces only the first, 'LAST' replaces only the last. If not specified, requires unique match (original behavior).","enum":["ALL","FIRST","LAST"],"type":"string"},` +
	`"view_range":{"description":"Optional parameter of ` + "`view`" + ` command when ` + "`path`" + ` points to a file. If none is given, the full file is shown. If provided, the file will be shown in the indicated line number range, e.g. [11, 12] will show lines 11 and 12. Indexing at 1 to start. Setting ` + "`[start_line, -1]`" + ` shows all lines from ` + "`start_line`" + ` to the end of the file.","items":{"type":"integer"},"type":"array"}` +
	`},"required":["command","path"],"type":"object"}`

// OutputSchema covers both answers: the editor's result ({command, path,
// output, error, prev_exist, old_content, new_content, success}) and a
// file error passed through ({command, error:{...}, message, path,
// success:false}).
const OutputSchema = `{"additionalProperties":false,"properties":{` +
	`"command":{"type":"string"},"path":{"type":"string"},"success":{"type":"boolean"},` +
	`"output":{"type":"string"},"prev_exist":{"type":"boolean"},` +
	`"old_content":{"type":["string","null"]},"new_content":{"type":["string","null"]},` +
	`"error":{"anyOf":[{"type":["string","null"]},` + files.ErrorSchema + `]},"message":{"type":"string"}` +
	`},"required":["command","error","path","success"],"type":"object"}`

func init() {
	sdk.Plugin(sdk.Info{
		Name:         Name,
		Version:      "1.0.0",
		Description:  "aiod built-in: the str_replace text editor with multi-level undo.",
		Capabilities: abi.Capabilities{Files: &abi.FilesScope{Paths: []abi.PathScope{{Path: "$SANDBOX", Mode: abi.ReadWrite}}}, State: &abi.StateScope{MaxBytes: 67108864}},
		// An edit of a 10 MB file returns its old and new content.
		Limits: abi.Limits{MemoryMiB: 512, MaxResultBytes: 67108864},
	})
	sdk.AddTool(sdk.Tool{Name: Name, Title: "Edit a text file", Description: Description,
		InputSchema: InputSchema, OutputSchema: OutputSchema,
		// str_replace and insert rewrite the file; undo_edit restores it.
		Annotations: sdk.Behavior{Destructive: true}.Annotations()}, Run)
}

func main() {}

// result is the editor's answer: openhands-aci's CLIResult plus command
// and success.
type result struct {
	command    string
	path       string
	output     string
	err        string
	prevExist  bool
	oldContent *string
	newContent *string
}

func (r *result) sdk() *sdk.Result {
	var e any
	if r.err != "" {
		e = r.err
	}
	return sdk.JSONResult(map[string]any{
		"command": r.command, "path": r.path, "output": r.output, "error": e,
		"prev_exist": r.prevExist, "old_content": r.oldContent, "new_content": r.newContent,
		"success": r.err == "",
	}, r.err != "")
}

func (a Args) fail(prevExist bool, msg string) *sdk.Result {
	r := &result{command: a.Command, path: a.Path, err: msg, prevExist: prevExist}
	return r.sdk()
}

// fileErr passes a structured file error through: {command, error:{...},
// message, path, success:false}.
func (a Args) fileErr(err error) *sdk.Result {
	var fe *files.Error
	if !errors.As(err, &fe) {
		return a.fail(false, err.Error())
	}
	return sdk.JSONResult(map[string]any{
		"command": a.Command, "error": fe, "message": fe.Message, "path": a.Path, "success": false,
	}, true)
}

func strp(s string) *string { return &s }

// Run executes one editor command.
func Run(_ *sdk.Ctx, a Args) (*sdk.Result, error) {
	switch a.Command {
	case "view", "create", "str_replace", "insert", "undo_edit":
	default:
		return a.fail(false, fmt.Sprintf("Unrecognized command %s. The allowed commands for the %s tool are: %s", a.Command, Name, allowedCommandList)), nil
	}
	if !strings.HasPrefix(a.Path, "/") {
		return a.fail(false, invalidParam("path", a.Path, "The path should be an absolute path, starting with `/`.")), nil
	}
	p := path.Clean(a.Path)
	st, err := files.Stat(p)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return a.fileErr(err), nil
	}
	switch {
	case a.Command == "create" && exists:
		return a.fail(true, invalidParam("path", p, "File already exists at: "+p+". Cannot overwrite files using command `create`.")), nil
	case a.Command != "create" && !exists:
		return a.fail(false, invalidParam("path", p, "The path "+p+" does not exist. Please provide a valid path.")), nil
	case a.Command != "view" && exists && st.IsDirectory:
		return a.fail(true, invalidParam("path", p, "The path "+p+" is a directory and only the `view` command can be used on directories.")), nil
	}
	switch a.Command {
	case "view":
		if st.IsDirectory {
			return viewDir(a, p), nil
		}
		return viewFile(a, p, st), nil
	case "create":
		return create(a, p), nil
	case "str_replace":
		return replace(a, p, st), nil
	case "insert":
		return insert(a, p, st), nil
	}
	return undo(a, p), nil
}

// readText reads and validates a file for viewing or editing.
func readText(a Args, p string, st *files.Info) (string, *sdk.Result) {
	if st.Size > maxFileBytes {
		return "", a.fail(true, fmt.Sprintf("File validation failed for %s: File is too large (%.1fMB). Maximum allowed size is %dMB.",
			p, float64(st.Size)/1024/1024, maxFileBytes>>20))
	}
	b, err := files.Read(p, nil)
	if err != nil {
		return "", a.fileErr(err)
	}
	sniff := b[:min(len(b), 8000)]
	if strings.IndexByte(string(sniff), 0) >= 0 {
		return "", a.fail(true, "File validation failed for "+p+": File appears to be binary and this file type cannot be read or edited by this tool.")
	}
	if !utf8.Valid(b) {
		return "", a.fail(true, "The editor only supports UTF-8 encoding files, please use bash commands for files with other encoding: "+p)
	}
	return string(b), nil
}

func viewFile(a Args, p string, st *files.Info) *sdk.Result {
	text, res := readText(a, p, st)
	if res != nil {
		return res
	}
	r := &result{command: a.Command, path: p, prevExist: true}
	if len(a.ViewRange) == 0 {
		r.output = catN(text, p, 1)
		return r.sdk()
	}
	out, msg := viewRange(text, p, a.ViewRange)
	if msg != "" {
		return a.fail(true, msg)
	}
	r.output = out
	return r.sdk()
}

// viewDir lists a directory two levels deep without hidden entries, as
// `find -L DIR -maxdepth 2 -not -path '*/.*' | sort` with "/" after
// directories.
func viewDir(a Args, p string) *sdk.Result {
	if len(a.ViewRange) > 0 {
		return a.fail(true, invalidParam("view_range", pyList(a.ViewRange), "The `view_range` parameter is not allowed when `path` points to a directory."))
	}
	w, err := files.Walk(p, &files.WalkOptions{MaxDepth: 2, MaxEntries: 10_000})
	if err != nil {
		return a.fileErr(err)
	}
	hiddenCount := 0
	type item struct {
		path string
		dir  bool
	}
	items := []item{{p, true}}
	for _, e := range w.Entries {
		rel := strings.TrimPrefix(strings.TrimPrefix(e.Path, w.Path), "/")
		if e.Depth == 1 && strings.HasPrefix(e.Name, ".") {
			hiddenCount++
		}
		if hiddenRel(rel) {
			continue
		}
		dir := e.IsDirectory
		if e.IsSymlink {
			if t, err := files.Stat(e.Path); err == nil {
				dir = t.IsDirectory
			}
		}
		items = append(items, item{e.Path, dir})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].path < items[j].path })
	var b strings.Builder
	b.WriteString("Here's the files and directories up to 2 levels deep in " + p + ", excluding hidden items:\n")
	for i, it := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(it.path)
		if it.dir {
			b.WriteByte('/')
		}
	}
	out := b.String()
	if w.Truncated {
		out += "\n" + dirClippedNotice
	}
	if hiddenCount > 0 {
		out += "\n\n" + strconv.Itoa(hiddenCount) + " hidden files/directories in this directory are excluded. You can use 'ls -la " + p + "' to see them."
	}
	r := &result{command: a.Command, path: p, prevExist: true, output: out}
	return r.sdk()
}

func hiddenRel(rel string) bool {
	for _, s := range strings.Split(rel, "/") {
		if strings.HasPrefix(s, ".") {
			return true
		}
	}
	return false
}

func create(a Args, p string) *sdk.Result {
	if a.FileText == nil {
		return a.fail(false, missingParam("create", "file_text"))
	}
	if _, err := files.Write(p, []byte(*a.FileText), &files.WriteOptions{Exclusive: true}); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return a.fail(true, invalidParam("path", p, "File already exists at: "+p+". Cannot overwrite files using command `create`."))
		}
		return a.fileErr(err)
	}
	pushHistory(p, version{Absent: true})
	r := &result{command: a.Command, path: p, prevExist: false, output: "File created successfully at: " + p, newContent: strp(*a.FileText)}
	return r.sdk()
}

func replace(a Args, p string, st *files.Info) *sdk.Result {
	if a.OldStr == nil {
		return a.fail(true, missingParam("str_replace", "old_str"))
	}
	newStr := ""
	if a.NewStr != nil {
		newStr = *a.NewStr
	}
	if a.NewStr != nil && *a.NewStr == *a.OldStr {
		return a.fail(true, invalidParam("new_str", newStr, "No replacement was performed. `new_str` and `old_str` must be different."))
	}
	mode := ""
	if a.ReplaceMode != nil {
		mode = strings.ToUpper(strings.TrimSpace(*a.ReplaceMode))
		switch mode {
		case "", "ALL", "FIRST", "LAST":
		default:
			return a.fail(true, invalidParam("replace_mode", *a.ReplaceMode, "It should be one of ALL, FIRST, LAST."))
		}
	}
	text, res := readText(a, p, st)
	if res != nil {
		return res
	}
	if *a.OldStr == "" {
		return a.fail(true, notFoundText)
	}
	rr := strReplace(text, *a.OldStr, newStr, mode)
	if rr.errMsg != "" {
		return a.fail(true, rr.errMsg)
	}
	if _, err := files.Write(p, []byte(rr.newText), nil); err != nil {
		return a.fileErr(err)
	}
	pushHistory(p, version{Content: text})
	r := &result{command: a.Command, path: p, prevExist: true,
		output:     replaceSnippet(rr.newText, p, newStr, rr.line),
		oldContent: strp(text), newContent: strp(rr.newText)}
	return r.sdk()
}

func insert(a Args, p string, st *files.Info) *sdk.Result {
	if a.InsertLine == nil {
		return a.fail(true, missingParam("insert", "insert_line"))
	}
	if a.NewStr == nil {
		return a.fail(true, missingParam("insert", "new_str"))
	}
	text, res := readText(a, p, st)
	if res != nil {
		return res
	}
	n, numLines := *a.InsertLine, countLines(text)
	if n < 0 || n > numLines {
		return a.fail(true, invalidParam("insert_line", strconv.Itoa(n),
			"It should be within the range of allowed values: "+pyList([]int{0, numLines})))
	}
	newText := insertText(text, n, *a.NewStr)
	if _, err := files.Write(p, []byte(newText), nil); err != nil {
		return a.fileErr(err)
	}
	pushHistory(p, version{Content: text})
	r := &result{command: a.Command, path: p, prevExist: true,
		output:     "The file " + p + " has been edited. " + insertSnippet(newText, numLines, n, *a.NewStr) + insertedReview,
		oldContent: strp(text), newContent: strp(newText)}
	return r.sdk()
}

func undo(a Args, p string) *sdk.Result {
	prev, ok := popHistory(p)
	if !ok {
		return a.fail(true, "No edit history found for "+p+".")
	}
	cur, err := files.Read(p, nil)
	if err != nil {
		pushHistory(p, prev)
		return a.fileErr(err)
	}
	current := string(cur)
	r := &result{command: a.Command, path: p, prevExist: true, oldContent: strp(current)}
	if prev.Absent {
		if err := files.Remove(p, nil); err != nil {
			pushHistory(p, prev)
			return a.fileErr(err)
		}
		r.output = "Last edit to " + p + " undone successfully. The file was created by that edit and has been removed."
		return r.sdk()
	}
	if _, err := files.Write(p, []byte(prev.Content), nil); err != nil {
		pushHistory(p, prev)
		return a.fileErr(err)
	}
	r.newContent = strp(prev.Content)
	r.output = "Last edit to " + p + " undone successfully. " + catN(prev.Content, p, 1)
	return r.sdk()
}
