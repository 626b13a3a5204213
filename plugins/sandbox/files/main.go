// Command files is the built-in plugin sandbox_file_operations: aiod's
// unified file tool (read, write, replace, search, find, list, grep, glob)
// over the aiod:files host functions. Every path goes through the host,
// which confines it to the granted roots (symbolic links included); a
// failed operation passes the host's structured file error straight
// through, as aiod does. spec/sandbox-tools.md describes the tool.
package main

import (
	"errors"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/files"
)

// Args are the tool's arguments (aiod's names and defaults).
type Args struct {
	Action          string   `json:"action"`
	Path            string   `json:"path"`
	Content         *string  `json:"content"`
	Target          *string  `json:"target"`
	Pattern         *string  `json:"pattern"`
	Encoding        *string  `json:"encoding"`
	StartLine       *int     `json:"start_line"`
	EndLine         *int     `json:"end_line"`
	Append          bool     `json:"append"`
	Recursive       bool     `json:"recursive"`
	ShowHidden      bool     `json:"show_hidden"`
	FileTypes       []string `json:"file_types"`
	Sudo            bool     `json:"sudo"`
	Include         []string `json:"include"`
	Exclude         []string `json:"exclude"`
	CaseInsensitive bool     `json:"case_insensitive"`
	FixedStrings    bool     `json:"fixed_strings"`
	ContextBefore   int      `json:"context_before"`
	ContextAfter    int      `json:"context_after"`
	MaxResults      *int     `json:"max_results"`
	IncludeMetadata *bool    `json:"include_metadata"`
	FilesOnly       *bool    `json:"files_only"`
}

// Description is the tool's description.
const Description = "Unified file system operations tool for agents. `/tmp` and `/home/$USER` are fully accessible.\n\n" +
	"Actions: read (content; start_line 0-based, end_line exclusive), write (content; append; encoding utf-8, base64 or raw), " +
	"replace (content = old text, target = new text; replaces every occurrence), search (content = regex; matching lines of one file, line numbers from 0), " +
	"find (pattern = glob on names; paths), list (a directory; recursive, show_hidden, file_types), " +
	"grep (pattern = regex or fixed string over a tree; include, exclude, case_insensitive, fixed_strings, context_before, context_after, max_results), " +
	"glob (pattern with **; files with size and modified time; files_only, include_metadata, max_results)."

// InputSchema is the tool's input schema, keys sorted as aiod emits them.
const InputSchema = `{"properties":{` +
	`"action":{"description":"The operation: read, write, replace, search, find, list, grep or glob","type":"string"},` +
	`"append":{"description":"Append to the file instead of overwriting it (write)","type":"boolean"},` +
	`"case_insensitive":{"description":"Case-insensitive matching (grep)","type":"boolean"},` +
	`"content":{"description":"Content to write (write), the text to replace (replace), or the regular expression (search)","type":"string"},` +
	`"context_after":{"description":"Lines of context after each match (grep)","type":"integer"},` +
	`"context_before":{"description":"Lines of context before each match (grep)","type":"integer"},` +
	`"encoding":{"description":"Content encoding: utf-8 (default), base64 or raw (read, write)","type":"string"},` +
	`"end_line":{"description":"End line, exclusive (read)","type":"integer"},` +
	`"exclude":{"description":"Glob patterns of files or directories to skip (grep, glob)","items":{"type":"string"},"type":"array"},` +
	`"file_types":{"description":"Only list files with these extensions, e.g. ['.py', '.txt'] (list)","items":{"type":"string"},"type":"array"},` +
	`"files_only":{"description":"Only return files, not directories (glob; default true)","type":"boolean"},` +
	`"fixed_strings":{"description":"Treat the pattern as a literal string, not a regex (grep)","type":"boolean"},` +
	`"include":{"description":"Glob patterns of the files to search, e.g. ['*.py'] (grep)","items":{"type":"string"},"type":"array"},` +
	`"include_metadata":{"description":"Include size and modified time (glob; default true)","type":"boolean"},` +
	`"max_results":{"description":"Maximum number of results (grep: default 500; glob: default 5000)","type":"integer"},` +
	`"path":{"description":"Absolute path of the file or directory","type":"string"},` +
	`"pattern":{"description":"Glob pattern (find, glob) or search pattern (grep)","type":"string"},` +
	`"recursive":{"description":"List the whole tree (list)","type":"boolean"},` +
	`"show_hidden":{"description":"Include hidden files and directories (list, find, grep, glob)","type":"boolean"},` +
	`"start_line":{"description":"Start line, 0-based (read)","type":"integer"},` +
	`"sudo":{"description":"Accepted for compatibility; files are always accessed with the server's own privileges","type":"boolean"},` +
	`"target":{"description":"The replacement text (replace)","type":"string"}` +
	`},"required":["action","path"],"type":"object"}`

// entrySchema is an entry of list (name, path, is_directory, size,
// extension, modified_time, is_hidden) or glob (its size and time null
// without include_metadata).
const entrySchema = `{"additionalProperties":false,"properties":{` +
	`"extension":{"type":["string","null"]},"is_directory":{"type":"boolean"},"is_hidden":{"type":"boolean"},` +
	`"modified_time":{"type":["string","null"]},"name":{"type":"string"},"path":{"type":"string"},` +
	`"size":{"type":["integer","null"]}},"required":["is_directory","name","path"],"type":"object"}`

// grepMatchSchema is a match of grep.
const grepMatchSchema = `{"additionalProperties":false,"properties":{` +
	`"context_after":{"items":{"type":"string"},"type":"array"},"context_before":{"items":{"type":"string"},"type":"array"},` +
	`"file":{"type":"string"},"line_content":{"type":"string"},"line_number":{"type":"integer"}},` +
	`"required":["file","line_content","line_number"],"type":"object"}`

// OutputSchema covers every answer: a success (action, path,
// success:true and the action's fields), a failure ({action, error,
// path, success:false}) and a file error ({action, error:{...}, message,
// path, success:false}).
const OutputSchema = `{"additionalProperties":false,"properties":{` +
	`"action":{"type":"string"},"path":{"type":"string"},"success":{"type":"boolean"},` +
	`"content":{"type":"string"},"bytes_written":{"type":"integer"},"replaced_count":{"type":"integer"},` +
	`"matches":{"anyOf":[{"items":{"type":"string"},"type":"array"},{"items":` + grepMatchSchema + `,"type":"array"}]},` +
	`"line_numbers":{"items":{"type":"integer"},"type":"array"},"match_count":{"type":"integer"},` +
	`"files":{"anyOf":[{"items":{"type":"string"},"type":"array"},{"items":` + entrySchema + `,"type":"array"}]},` +
	`"file_count":{"type":"integer"},"directory_count":{"type":"integer"},"total_count":{"type":"integer"},` +
	`"files_searched":{"type":"integer"},"files_matched":{"type":"integer"},"truncated":{"type":"boolean"},` +
	`"error":{"anyOf":[{"type":"string"},` + files.ErrorSchema + `]},"message":{"type":"string"}` +
	`},"required":["action","path","success"],"type":"object"}`

func init() {
	sdk.Plugin(sdk.Info{
		Name:         "sandbox_file_operations",
		Version:      "1.0.0",
		Description:  "aiod built-in: file operations (read, write, replace, search, find, list, grep, glob).",
		Capabilities: abi.Capabilities{Files: &abi.FilesScope{Paths: []abi.PathScope{{Path: "$SANDBOX", Mode: abi.ReadWrite}}}},
		// A 16 MiB read is returned twice (text and structuredContent).
		Limits: abi.Limits{MemoryMiB: 512, MaxResultBytes: 67108864},
	})
	sdk.AddTool(sdk.Tool{
		Name:         "sandbox_file_operations",
		Title:        "File operations",
		Description:  Description,
		InputSchema:  InputSchema,
		OutputSchema: OutputSchema,
		// write overwrites, replace rewrites, append grows a file.
		Annotations: sdk.Behavior{Destructive: true}.Annotations(),
	}, Run)
}

func main() {}

// Run performs one action.
func Run(_ *sdk.Ctx, a Args) (*sdk.Result, error) {
	switch a.Action {
	case "read":
		return read(a), nil
	case "write":
		return write(a), nil
	case "replace":
		return replace(a), nil
	case "search":
		return search(a), nil
	case "find":
		return find(a), nil
	case "list":
		return list(a), nil
	case "grep":
		return grep(a), nil
	case "glob":
		return glob(a), nil
	}
	return fail(a, "Unsupported action: "+a.Action), nil
}

// ok is a success: fields plus action, path and success.
func ok(a Args, fields map[string]any) *sdk.Result {
	fields["action"] = a.Action
	fields["path"] = a.Path
	fields["success"] = true
	return sdk.JSONResult(fields, false)
}

// fail is a failure that is not a file error: {action, error, path,
// success:false}, as aiod answers a missing argument or a bad pattern.
func fail(a Args, msg string) *sdk.Result {
	return sdk.JSONResult(map[string]any{
		"action": a.Action, "error": msg, "path": a.Path, "success": false,
	}, true)
}

// fileErr passes a structured file error through as aiod does:
// {action, error:{errno, errno_name, ...}, message, path, success:false}.
func fileErr(a Args, err error) *sdk.Result {
	var fe *files.Error
	if !errors.As(err, &fe) {
		return fail(a, err.Error())
	}
	return sdk.JSONResult(map[string]any{
		"action": a.Action, "error": fe, "message": fe.Message, "path": a.Path, "success": false,
	}, true)
}
