package caps_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/caps/internal/genschema"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Paths relative to this package's directory (go test runs there).
const (
	schemaFile  = "../../spec/manifest/v1/schema.json"
	examplesDir = "../../spec/examples/manifests"
)

var (
	schemaOnce     sync.Once
	schemaResolved *jsonschema.Resolved
	schemaDoc      map[string]any
	schemaErr      error
)

// manifestSchema returns the committed schema, resolved for validation, and
// its raw document.
func manifestSchema(t testing.TB) (*jsonschema.Resolved, map[string]any) {
	t.Helper()
	schemaOnce.Do(func() {
		b, err := os.ReadFile(schemaFile)
		if err != nil {
			schemaErr = err
			return
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			schemaErr = err
			return
		}
		if schemaResolved, schemaErr = s.Resolve(nil); schemaErr != nil {
			return
		}
		schemaErr = json.Unmarshal(b, &schemaDoc)
	})
	if schemaErr != nil {
		t.Fatalf("schema %s: %v", schemaFile, schemaErr)
	}
	return schemaResolved, schemaDoc
}

// validateSchema validates a JSON document against the manifest schema, as
// any JSON Schema validator would: parse, then validate the value.
func validateSchema(t testing.TB, data []byte) error {
	rs, _ := manifestSchema(t)
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	return rs.Validate(v)
}

func TestSchemaUpToDate(t *testing.T) {
	want, err := genschema.Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the generator writes from the Go types: run go generate ./host/caps", schemaFile)
	}
}

// TestSchemaMatchesGoTypes walks the Go types from abi.Manifest and checks,
// for every struct, that its JSON field names are exactly the properties of
// the schema object it corresponds to, that unknown properties are refused,
// and that the JSON types agree.
func TestSchemaMatchesGoTypes(t *testing.T) {
	_, doc := manifestSchema(t)
	defs, _ := doc["$defs"].(map[string]any)
	seen := map[reflect.Type]bool{}
	var walk func(path string, typ reflect.Type, s map[string]any)
	walk = func(path string, typ reflect.Type, s map[string]any) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		if s["additionalProperties"] != false {
			t.Errorf("%s (%s): additionalProperties must be false, like the strict decoder", path, typ.Name())
		}
		props, _ := s["properties"].(map[string]any)
		var goNames []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := jsonName(f)
			if name == "" {
				continue
			}
			goNames = append(goNames, name)
			p, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s: Go field %s.%s (json %q) is not a schema property", path, typ.Name(), f.Name, name)
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft == reflect.TypeFor[json.RawMessage]() {
				continue // free-form JSON (inputSchema, outputSchema)
			}
			sub := target(t, defs, p)
			checkJSONType(t, path+"."+name, ft, sub)
			for ft.Kind() == reflect.Slice {
				ft = ft.Elem()
				sub = target(t, defs, sub["items"].(map[string]any))
			}
			if ft.Kind() == reflect.Struct {
				walk(path+"."+name, ft, sub)
			}
		}
		var schemaNames []string
		for k := range props {
			schemaNames = append(schemaNames, k)
		}
		sort.Strings(goNames)
		sort.Strings(schemaNames)
		if !slices.Equal(goNames, schemaNames) {
			t.Errorf("%s (%s): Go JSON fields %v, schema properties %v", path, typ.Name(), goNames, schemaNames)
		}
	}
	walk("manifest", reflect.TypeFor[abi.Manifest](), doc)
	for _, typ := range []reflect.Type{
		reflect.TypeFor[abi.Tool](), reflect.TypeFor[abi.ToolAnnotations](), reflect.TypeFor[abi.Capabilities](),
		reflect.TypeFor[abi.FilesScope](), reflect.TypeFor[abi.PathScope](), reflect.TypeFor[abi.ProcessScope](),
		reflect.TypeFor[abi.StateScope](), reflect.TypeFor[abi.CDPScope](), reflect.TypeFor[abi.UpstreamScope](),
		reflect.TypeFor[abi.Limits](), reflect.TypeFor[abi.Prompt](), reflect.TypeFor[abi.PromptArgument](),
		reflect.TypeFor[abi.Resource](), reflect.TypeFor[abi.ResourceTemplate](),
	} {
		if !seen[typ] {
			t.Errorf("the walk from Manifest never reached %s in the schema", typ.Name())
		}
	}
}

// jsonName is the JSON property name of a struct field, as encoding/json
// spells it ("" for none).
func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return name
}

// target follows a property schema to the schema that describes its
// non-null values: through anyOf [X, null] and $ref.
func target(t *testing.T, defs map[string]any, p map[string]any) map[string]any {
	t.Helper()
	if alts, ok := p["anyOf"].([]any); ok {
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok && m["type"] != "null" {
				p = m
				break
			}
		}
	}
	if r, ok := p["$ref"].(string); ok {
		name, ok := strings.CutPrefix(r, "#/$defs/")
		d, _ := defs[name].(map[string]any)
		if !ok || d == nil {
			t.Fatalf("unresolvable $ref %q", r)
		}
		return d
	}
	return p
}

func checkJSONType(t *testing.T, path string, ft reflect.Type, s map[string]any) {
	t.Helper()
	var want string
	switch ft.Kind() {
	case reflect.String:
		want = "string"
	case reflect.Bool:
		want = "boolean"
	case reflect.Int, reflect.Int64:
		want = "integer"
	case reflect.Slice:
		want = "array"
	case reflect.Struct, reflect.Map:
		want = "object"
	default:
		t.Errorf("%s: Go kind %s not handled by this test", path, ft.Kind())
		return
	}
	var got []string
	switch v := s["type"].(type) {
	case string:
		got = []string{v}
	case []any:
		for _, e := range v {
			got = append(got, e.(string))
		}
	}
	if !slices.Contains(got, want) {
		t.Errorf("%s: Go %s wants JSON type %q, schema says %v", path, ft, want, s["type"])
	}
}

func goldenFiles(t *testing.T, kind string) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(examplesDir, kind, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 5 {
		t.Fatalf("only %d golden manifests in %s/%s", len(names), examplesDir, kind)
	}
	out := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(n)] = b
	}
	return out
}

// TestGoldenManifests: every manifest in valid/ passes both the schema and
// caps.ParseManifest; every one in invalid/ fails both.
func TestGoldenManifests(t *testing.T) {
	for _, kind := range []string{"valid", "invalid"} {
		for name, b := range goldenFiles(t, kind) {
			t.Run(kind+"/"+name, func(t *testing.T) {
				_, goErr := caps.ParseManifest(b)
				schemaErr := validateSchema(t, b)
				if kind == "valid" {
					if goErr != nil {
						t.Errorf("ParseManifest: %v", goErr)
					}
					if schemaErr != nil {
						t.Errorf("schema: %v", schemaErr)
					}
					return
				}
				if goErr == nil {
					t.Error("ParseManifest accepts it")
				} else if !errors.Is(goErr, caps.ErrInvalidManifest) {
					t.Errorf("ParseManifest error does not wrap ErrInvalidManifest: %v", goErr)
				}
				if schemaErr == nil {
					t.Error("the schema accepts it")
				}
			})
		}
	}
}

// TestSchemaGaps pins the few rules JSON Schema cannot express, which
// spec/manifest/v1/README.md lists: the schema accepts these manifests and
// the host refuses them. If one starts failing, the gap is closed (or
// widened): update the README.
func TestSchemaGaps(t *testing.T) {
	tool := func(name string) string {
		return `{"name":"` + name + `","inputSchema":{"type":"object"}}`
	}
	for _, tc := range []struct{ name, doc, goErr string }{
		{"duplicate tool names", `{"name":"p","abi":1,"tools":[` + tool("t") + `,` + tool("t") + `]}`, `tool "t" declared twice`},
		{"duplicate prompt names", `{"name":"p","abi":1,"prompts":[{"name":"a"},{"name":"a"}]}`, `prompt "a" declared twice`},
		{"duplicate resource URIs", `{"name":"p","abi":1,"resources":[{"uri":"x:a","name":"a"},{"uri":"x:a","name":"b"}]}`, `resource "x:a" declared twice`},
		{"unbalanced template braces", `{"name":"p","abi":1,"resourceTemplates":[{"uriTemplate":"x://{a}}","name":"a"}]}`, "unbalanced braces"},
		{"integer written with a fraction", `{"name":"p","abi":1.0,"tools":[` + tool("t") + `]}`, "cannot unmarshal number 1.0"},
		{"integer written with an exponent", `{"name":"p","abi":1,"limits":{"timeout_ms":1e3},"tools":[` + tool("t") + `]}`, "cannot unmarshal number 1e3"},
		{"integer beyond 64 bits", `{"name":"p","abi":1,"limits":{"timeout_ms":9223372036854775808},"tools":[` + tool("t") + `]}`, "cannot unmarshal number 9223372036854775808"},
		{"duplicate field", `{"name":"p","abi":1,"tools":[` + tool("t") + `],"name":"q"}`, `duplicate field "name"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := validateSchema(t, []byte(tc.doc)); err != nil {
				t.Errorf("schema refuses it (gap closed?): %v", err)
			}
			_, err := caps.ParseManifest([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.goErr) {
				t.Errorf("ParseManifest: %v, want an error containing %q", err, tc.goErr)
			}
		})
	}
}
