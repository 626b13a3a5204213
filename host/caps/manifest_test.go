package caps_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/sdk/abi"
)

// base returns a valid manifest that uses every part of the format.
func base() *abi.Manifest {
	yes := true
	return &abi.Manifest{
		Name: "notes", Version: "1.0.0", ABI: 1, Form: "reactor", Module: "notes.wasm",
		SHA256: strings.Repeat("ab", 32),
		Tools: []abi.Tool{{
			Name: "notes.write", InputSchema: json.RawMessage(`{"type":"object"}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &abi.ToolAnnotations{ReadOnlyHint: &yes},
		}},
		Prompts:           []abi.Prompt{{Name: "summarize", Arguments: []abi.PromptArgument{{Name: "title", Required: true}}}},
		Resources:         []abi.Resource{{URI: "notes://index", Name: "index"}},
		ResourceTemplates: []abi.ResourceTemplate{{URITemplate: "notes://note/{title}", Name: "note"}},
		Capabilities: abi.Capabilities{
			Files:   &abi.FilesScope{Paths: []abi.PathScope{{Path: "$SANDBOX", Mode: abi.ReadWrite}}},
			Process: &abi.ProcessScope{Commands: []string{"git"}, Cwd: []string{"$WORKSPACE"}},
			State:   &abi.StateScope{MaxBytes: 1024},
		},
		Limits: abi.Limits{MemoryMiB: 64, TimeoutMs: 1000, MaxResultBytes: 1 << 20, MaxInstances: 2},
	}
}

func TestValidateErrors(t *testing.T) {
	schema := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name   string
		change func(m *abi.Manifest)
		want   string // the whole message; "" = valid
	}{
		{"valid", func(m *abi.Manifest) {}, ""},
		{"defaults", func(m *abi.Manifest) { m.Form, m.Module, m.SHA256, m.Version = "", "", "", "" }, ""},
		{"command form", func(m *abi.Manifest) { m.Form = "command" }, ""},
		{"name at 64", func(m *abi.Manifest) { m.Name = strings.Repeat("n", 64) }, ""},
		{"only a template", func(m *abi.Manifest) { m.Tools, m.Prompts, m.Resources = nil, nil, nil }, ""},
		{"memory at 4096", func(m *abi.Manifest) { m.Limits.MemoryMiB = 4096 }, ""},
		{"process star", func(m *abi.Manifest) { m.Capabilities.Process.Commands = []string{"*"} }, ""},

		{"empty name", func(m *abi.Manifest) { m.Name = "" },
			`invalid manifest: name "" must match ^[a-z0-9][a-z0-9_-]{0,63}$`},
		{"name too long", func(m *abi.Manifest) { m.Name = strings.Repeat("n", 65) },
			`invalid manifest: name "` + strings.Repeat("n", 65) + `" must match ^[a-z0-9][a-z0-9_-]{0,63}$`},
		{"name uppercase", func(m *abi.Manifest) { m.Name = "Notes" },
			`invalid manifest: name "Notes" must match ^[a-z0-9][a-z0-9_-]{0,63}$`},
		{"name underscore first", func(m *abi.Manifest) { m.Name = "_notes" },
			`invalid manifest: name "_notes" must match ^[a-z0-9][a-z0-9_-]{0,63}$`},
		{"abi 0", func(m *abi.Manifest) { m.ABI = 0 },
			`invalid manifest: plugin notes: abi 0 is not supported (this host speaks abi 1)`},
		{"abi 2", func(m *abi.Manifest) { m.ABI = 2 },
			`invalid manifest: plugin notes: abi 2 is not supported (this host speaks abi 1)`},
		{"form", func(m *abi.Manifest) { m.Form = "Reactor" },
			`invalid manifest: plugin notes: form "Reactor" must be "reactor", "command" or "extism"`},
		{"config outside extism", func(m *abi.Manifest) { m.Config = map[string]string{"k": "v"} },
			`invalid manifest: plugin notes: config is for form "extism" only`},
		{"http host with a port", func(m *abi.Manifest) { m.Capabilities.HTTP = &abi.HTTPScope{Hosts: []string{"example.com:80"}} },
			`invalid manifest: plugin notes: capabilities: http: bad host "example.com:80" (a host name or a pattern like *.example.com)`},
		{"module path", func(m *abi.Manifest) { m.Module = "../x.wasm" },
			`invalid manifest: plugin notes: module "../x.wasm" must be a file name in the plugin directory`},
		{"module backslash", func(m *abi.Manifest) { m.Module = `a\b` },
			`invalid manifest: plugin notes: module "a\\b" must be a file name in the plugin directory`},
		{"module dot", func(m *abi.Manifest) { m.Module = "." },
			`invalid manifest: plugin notes: module "." must be a file name in the plugin directory`},
		{"sha256 upper", func(m *abi.Manifest) { m.SHA256 = strings.Repeat("AB", 32) },
			`invalid manifest: plugin notes: sha256 must be 64 lowercase hex digits`},
		{"sha256 65", func(m *abi.Manifest) { m.SHA256 += "a" },
			`invalid manifest: plugin notes: sha256 must be 64 lowercase hex digits`},
		{"nothing declared", func(m *abi.Manifest) { m.Tools, m.Prompts, m.Resources, m.ResourceTemplates = nil, nil, nil, nil },
			`invalid manifest: plugin notes declares no tools, prompts, resources or hooks`},
		{"tool name", func(m *abi.Manifest) { m.Tools[0].Name = "a b" },
			`invalid manifest: plugin notes: tool 0: name "a b" must match ^[A-Za-z0-9_.-]{1,128}$`},
		{"tool name 129", func(m *abi.Manifest) { m.Tools[0].Name = strings.Repeat("t", 129) },
			`invalid manifest: plugin notes: tool 0: name "` + strings.Repeat("t", 129) + `" must match ^[A-Za-z0-9_.-]{1,128}$`},
		{"tool twice", func(m *abi.Manifest) { m.Tools = append(m.Tools, m.Tools[0]) },
			`invalid manifest: plugin notes: tool "notes.write" declared twice`},
		{"no input schema", func(m *abi.Manifest) { m.Tools[0].InputSchema = nil },
			`invalid manifest: plugin notes: tool notes.write: inputSchema: required`},
		{"null input schema", func(m *abi.Manifest) { m.Tools[0].InputSchema = schema(`null`) },
			`invalid manifest: plugin notes: tool notes.write: inputSchema: required`},
		{"input schema type", func(m *abi.Manifest) { m.Tools[0].InputSchema = schema(`{"type":"array"}`) },
			`invalid manifest: plugin notes: tool notes.write: inputSchema: must have "type": "object"`},
		{"input schema type list", func(m *abi.Manifest) { m.Tools[0].InputSchema = schema(`{"type":["object"]}`) },
			`invalid manifest: plugin notes: tool notes.write: inputSchema: must have "type": "object"`},
		{"input schema not object", func(m *abi.Manifest) { m.Tools[0].InputSchema = schema(`true`) },
			`invalid manifest: plugin notes: tool notes.write: inputSchema: must be a JSON object: json: cannot unmarshal bool into Go value of type map[string]interface {}`},
		{"output schema type", func(m *abi.Manifest) { m.Tools[0].OutputSchema = schema(`{}`) },
			`invalid manifest: plugin notes: tool notes.write: outputSchema: must have "type": "object"`},
		{"no output schema", func(m *abi.Manifest) { m.Tools[0].OutputSchema = nil }, ""},
		{"prompt name", func(m *abi.Manifest) { m.Prompts[0].Name = "" },
			`invalid manifest: plugin notes: prompt 0: name "" must match ^[A-Za-z0-9_.-]{1,128}$`},
		{"prompt twice", func(m *abi.Manifest) { m.Prompts = append(m.Prompts, m.Prompts[0]) },
			`invalid manifest: plugin notes: prompt "summarize" declared twice`},
		{"prompt argument", func(m *abi.Manifest) { m.Prompts[0].Arguments[0].Name = "" },
			`invalid manifest: plugin notes: prompt summarize: an argument has no name`},
		{"resource uri", func(m *abi.Manifest) { m.Resources[0].URI = "a b" },
			`invalid manifest: plugin notes: resource 0: uri "a b" and name "index" must be non-empty (uri without spaces)`},
		{"resource name", func(m *abi.Manifest) { m.Resources[0].Name = "" },
			`invalid manifest: plugin notes: resource 0: uri "notes://index" and name "" must be non-empty (uri without spaces)`},
		{"resource twice", func(m *abi.Manifest) { m.Resources = append(m.Resources, m.Resources[0]) },
			`invalid manifest: plugin notes: resource "notes://index" declared twice`},
		{"template variable", func(m *abi.Manifest) { m.ResourceTemplates[0].URITemplate = "notes://x" },
			`invalid manifest: plugin notes: resource template 0: uriTemplate "notes://x" needs a {variable} and a name`},
		{"template braces", func(m *abi.Manifest) { m.ResourceTemplates[0].URITemplate = "notes://{a" },
			`invalid manifest: plugin notes: resource template "notes://{a": unbalanced braces`},
		{"files path", func(m *abi.Manifest) { m.Capabilities.Files.Paths[0].Path = "notes" },
			`invalid manifest: plugin notes: capabilities: files: path "notes" must be absolute or start with one of [$SANDBOX $HOME $TMP $WORKSPACE]`},
		{"files path variable run on", func(m *abi.Manifest) { m.Capabilities.Files.Paths[0].Path = "$TMPDIR" },
			`invalid manifest: plugin notes: capabilities: files: path "$TMPDIR" must be absolute or start with one of [$SANDBOX $HOME $TMP $WORKSPACE]`},
		{"files path NUL", func(m *abi.Manifest) { m.Capabilities.Files.Paths[0].Path = "/a\x00" },
			`invalid manifest: plugin notes: capabilities: files: path "/a\x00" contains NUL`},
		{"files mode", func(m *abi.Manifest) { m.Capabilities.Files.Paths[0].Mode = "RW" },
			`invalid manifest: plugin notes: capabilities: files: path "$SANDBOX": mode must be "ro" or "rw"`},
		{"files no paths", func(m *abi.Manifest) { m.Capabilities.Files.Paths = nil }, ""},
		{"no commands", func(m *abi.Manifest) { m.Capabilities.Process.Commands = nil },
			`invalid manifest: plugin notes: capabilities: process: commands must list at least one program`},
		{"empty command", func(m *abi.Manifest) { m.Capabilities.Process.Commands = []string{"git", ""} },
			`invalid manifest: plugin notes: capabilities: process: bad command ""`},
		{"command newline", func(m *abi.Manifest) { m.Capabilities.Process.Commands = []string{"git\n"} },
			`invalid manifest: plugin notes: capabilities: process: bad command "git\n"`},
		{"cwd", func(m *abi.Manifest) { m.Capabilities.Process.Cwd = []string{"~"} },
			`invalid manifest: plugin notes: capabilities: process: cwd: path "~" must be absolute or start with one of [$SANDBOX $HOME $TMP $WORKSPACE]`},
		{"state", func(m *abi.Manifest) { m.Capabilities.State.MaxBytes = -1 },
			`invalid manifest: plugin notes: capabilities: state: max_bytes must be non-negative`},
		{"memory", func(m *abi.Manifest) { m.Limits.MemoryMiB = 4097 },
			`invalid manifest: plugin notes: limits must be non-negative (memory_mib at most 4096)`},
		{"timeout", func(m *abi.Manifest) { m.Limits.TimeoutMs = -1 },
			`invalid manifest: plugin notes: limits must be non-negative (memory_mib at most 4096)`},
		{"result", func(m *abi.Manifest) { m.Limits.MaxResultBytes = -1 },
			`invalid manifest: plugin notes: limits must be non-negative (memory_mib at most 4096)`},
		{"instances", func(m *abi.Manifest) { m.Limits.MaxInstances = -1 },
			`invalid manifest: plugin notes: limits must be non-negative (memory_mib at most 4096)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := base()
			tc.change(m)
			err := caps.ValidateManifest(m)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want == "":
				return
			case err == nil:
				t.Fatalf("Validate accepts it, want %q", tc.want)
			case err.Error() != tc.want:
				t.Fatalf("Validate:\n got %s\nwant %s", err, tc.want)
			case !errors.Is(err, caps.ErrInvalidManifest):
				t.Fatalf("%v does not wrap ErrInvalidManifest", err)
			}
			// The same manifest through JSON fails the same way.
			b, merr := json.Marshal(m)
			if merr != nil {
				return // e.g. an invalid RawMessage: nothing to round-trip
			}
			if _, err2 := caps.ParseManifest(b); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("ParseManifest of the encoding: %v, want %v", err2, err)
			}
		})
	}
}

func TestParseManifestDecoding(t *testing.T) {
	const tools = `"tools":[{"name":"t","inputSchema":{"type":"object"}}]`
	for _, tc := range []struct {
		name, doc, want string // want: the whole message; "" = valid
	}{
		{"minimal", `{"name":"p","abi":1,` + tools + `}`, ""},
		{"whitespace around", " \n\t{\"name\":\"p\",\"abi\":1," + tools + "}\n\n", ""},
		{"null optional fields", `{"name":"p","abi":1,"version":null,"capabilities":null,"limits":null,` + tools + `}`, ""},
		{"duplicates inside inputSchema are the schema's business",
			`{"name":"p","abi":1,"tools":[{"name":"t","inputSchema":{"type":"x","type":"object"}}]}`, ""},
		{"not JSON", `name: p`, "invalid manifest: invalid character 'a' in literal null (expecting 'u')"},
		{"empty", ``, "invalid manifest: EOF"},
		{"truncated", `{"name":"p"`, "invalid manifest: unexpected EOF"},
		{"array", `[]`, "invalid manifest: json: cannot unmarshal array into Go value of type abi.Manifest"},
		{"null", `null`, `invalid manifest: name "" must match ^[a-z0-9][a-z0-9_-]{0,63}$`},
		{"trailing object", `{"name":"p","abi":1,` + tools + `}{}`, "invalid manifest: trailing data after JSON value"},
		{"trailing brace", `{"name":"p","abi":1,` + tools + `}}`, "invalid manifest: trailing data after JSON value"},
		{"trailing bracket", `{"name":"p","abi":1,` + tools + `}]`, "invalid manifest: trailing data after JSON value"},
		{"trailing comma", `{"name":"p","abi":1,` + tools + `},`, "invalid manifest: trailing data after JSON value"},
		{"trailing garbage", `{"name":"p","abi":1,` + tools + `} x`, "invalid manifest: trailing data after JSON value"},
		{"unknown field", `{"name":"p","abi":1,"network":true,` + tools + `}`, `invalid manifest: json: unknown field "network"`},
		{"unknown nested field", `{"name":"p","abi":1,"limits":{"cpus":1},` + tools + `}`, `invalid manifest: json: unknown field "cpus"`},
		{"wrong case", `{"name":"p","ABI":1,` + tools + `}`, `invalid manifest: json: unknown field "ABI"`},
		{"wrong case nested", `{"name":"p","abi":1,"capabilities":{"Files":{"paths":[]}},` + tools + `}`, `invalid manifest: json: unknown field "Files"`},
		{"wrong case in a list", `{"name":"p","abi":1,"tools":[{"Name":"t","inputSchema":{"type":"object"}}]}`, `invalid manifest: json: unknown field "Name"`},
		{"unicode case fold", `{"name":"p","abi":1,"capabilities":{"process":{"commands":["ls"],"ſhell":true}},` + tools + `}`,
			`invalid manifest: json: unknown field "ſhell"`},
		{"duplicate field", `{"name":"p","name":"p","abi":1,` + tools + `}`, `invalid manifest: json: duplicate field "name"`},
		{"duplicate differing in case", `{"name":"p","Name":"q","abi":1,` + tools + `}`, `invalid manifest: json: unknown field "Name"`},
		{"duplicate nested", `{"name":"p","abi":1,"capabilities":{"state":{},"state":{}},` + tools + `}`, `invalid manifest: json: duplicate field "state"`},
		{"wrong type", `{"name":"p","abi":"1",` + tools + `}`, "invalid manifest: json: cannot unmarshal string into Go struct field Manifest.abi of type int"},
		{"fraction", `{"name":"p","abi":1.0,` + tools + `}`, "invalid manifest: json: cannot unmarshal number 1.0 into Go struct field Manifest.abi of type int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := caps.ParseManifest([]byte(tc.doc))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("ParseManifest: %v", err)
			case tc.want == "" && m == nil:
				t.Fatal("ParseManifest returned neither a manifest nor an error")
			case tc.want == "":
			case err == nil:
				t.Fatalf("ParseManifest accepts it, want %q", tc.want)
			case err.Error() != tc.want:
				t.Fatalf("ParseManifest:\n got %s\nwant %s", err, tc.want)
			case !errors.Is(err, caps.ErrInvalidManifest):
				t.Fatalf("%v does not wrap ErrInvalidManifest", err)
			case m != nil:
				t.Fatal("ParseManifest returned a manifest with its error")
			}
		})
	}
}

func TestStrictUnmarshalMaps(t *testing.T) {
	var p struct {
		M map[string]struct {
			A int `json:"a"`
		} `json:"m"`
		Raw json.RawMessage `json:"raw"`
		Any any             `json:"any"`
	}
	for _, tc := range []struct{ doc, want string }{
		{`{"m":{"x":{"a":1},"X":{"a":2}}}`, ""}, // map keys are data: case matters, both kept
		{`{"m":{"x":{"a":1},"x":{"a":2}}}`, `json: duplicate field "x"`},
		{`{"m":{"x":{"A":1}}}`, `json: unknown field "A"`},
		{`{"raw":{"k":1,"k":2},"any":{"k":1,"k":2}}`, ""}, // free-form JSON is not checked
	} {
		err := caps.StrictUnmarshal([]byte(tc.doc), &p)
		if got := errString(err); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.doc, got, tc.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestFamilies(t *testing.T) {
	var all abi.Capabilities
	for _, f := range abi.Families {
		if all.Has(f) {
			t.Errorf("zero Capabilities has %s", f)
		}
		if got, want := f.ImportModule(), "aiod:"+string(f); got != want {
			t.Errorf("ImportModule = %q, want %q", got, want)
		}
	}
	full := abi.Capabilities{Files: &abi.FilesScope{}, Process: &abi.ProcessScope{}, State: &abi.StateScope{},
		CDP: &abi.CDPScope{}, Upstream: &abi.UpstreamScope{}, HTTP: &abi.HTTPScope{}}
	for _, f := range abi.Families {
		if !full.Has(f) {
			t.Errorf("full Capabilities lacks %s", f)
		}
	}
	if full.Has("net") {
		t.Error("Has reports an unknown family")
	}
}
