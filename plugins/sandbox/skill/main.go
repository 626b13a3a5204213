// Command skill is the built-in plugin sandbox_load_skill: skills are
// directories holding a SKILL.md (YAML front matter with name and
// description, then the instructions), found under AIO_SKILLS_PATH.
// Without a name the tool lists them; with one it loads that skill.
//
// The plugin learns AIO_SKILLS_PATH by running `printenv AIO_SKILLS_PATH`
// through the aiod:process family (its only program), and reads the
// skills read-only through the aiod:files family, so skills must lie in
// the sandbox's roots. spec/sandbox-tools.md describes the tool.
package main

import (
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/files"
	"github.com/aiodhq/aiod/sdk/process"
)

// Args are the tool's arguments.
type Args struct {
	Name *string `json:"name"`
}

// Name is the tool's (and the plugin's) name.
const Name = "sandbox_load_skill"

// InputSchema is the tool's input schema.
const InputSchema = `{"properties":{"name":{"description":"Name of the skill to load. Omit it to list all available skills.","type":"string"}},"type":"object"}`

// EnvVar names the skills root(s).
const EnvVar = "AIO_SKILLS_PATH"

func init() {
	sdk.Plugin(sdk.Info{
		Name:         Name,
		Version:      "1.0.0",
		Description:  "aiod built-in: list and load skills from AIO_SKILLS_PATH.",
		Capabilities: abi.Capabilities{Files: &abi.FilesScope{Paths: []abi.PathScope{{Path: "$SANDBOX", Mode: abi.ReadOnly}}}, Process: &abi.ProcessScope{Commands: []string{"printenv"}, Cwd: []string{"$SANDBOX"}}},
	})
	sdk.AddTool(sdk.Tool{
		Name:        Name,
		Title:       "Load a skill",
		Annotations: sdk.Behavior{ReadOnly: true}.Annotations(),
		Description: "Load a skill by name, or list all available skills when name is omitted.",
		InputSchema: InputSchema,
	}, Run)
}

func main() {}

// skill is one skill directory.
type skill struct {
	name, description, dir string
	body                   string
}

// Run lists or loads.
func Run(_ *sdk.Ctx, a Args) (*sdk.Result, error) {
	skills := discover(roots())
	if a.Name == nil || strings.TrimSpace(*a.Name) == "" {
		var b strings.Builder
		b.WriteString("Skills Count: " + strconv.Itoa(len(skills)))
		if len(skills) > 0 {
			b.WriteString("\n")
		}
		for _, s := range skills {
			b.WriteString("\n- " + s.name + "\n  " + s.description)
		}
		return sdk.TextResult(b.String()), nil
	}
	want := strings.TrimSpace(*a.Name)
	for _, match := range []func(s skill) bool{
		func(s skill) bool { return s.name == want },
		func(s skill) bool { return path.Base(s.dir) == want },
		func(s skill) bool {
			return strings.EqualFold(s.name, want) || strings.EqualFold(path.Base(s.dir), want)
		},
	} {
		for _, s := range skills {
			if match(s) {
				return sdk.TextResult("Base Path: " + s.dir + "\n\n" + s.body), nil
			}
		}
	}
	return sdk.TextResult("Skill not found: " + want), nil
}

// roots returns the directories named by AIO_SKILLS_PATH (several may be
// separated by ':'; surrounding quotes are stripped).
func roots() []string {
	res, err := process.Run("printenv", EnvVar)
	if err != nil || res.ExitCode != 0 {
		return nil
	}
	var out []string
	for _, p := range strings.Split(strings.TrimSpace(res.Stdout), ":") {
		p = strings.Trim(strings.TrimSpace(p), `"'`)
		if p != "" && strings.HasPrefix(p, "/") {
			out = append(out, path.Clean(p))
		}
	}
	return out
}

// discover finds the skills: a root holding SKILL.md is one skill;
// otherwise each of its subdirectories holding one is.
func discover(roots []string) []skill {
	var out []skill
	seen := map[string]bool{}
	add := func(dir string) bool {
		if seen[dir] {
			return true
		}
		b, err := files.Read(path.Join(dir, "SKILL.md"), &files.ReadOptions{MaxBytes: 4 << 20})
		if err != nil {
			return false
		}
		seen[dir] = true
		s := parse(dir, string(b))
		out = append(out, s)
		return true
	}
	for _, r := range roots {
		if add(r) {
			continue
		}
		l, err := files.List(r, nil)
		if err != nil {
			continue
		}
		for _, e := range l.Entries {
			if strings.HasPrefix(e.Name, ".") {
				continue
			}
			if e.IsDirectory || e.IsSymlink {
				add(e.Path)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// parse splits SKILL.md into front matter fields and body.
func parse(dir, text string) skill {
	s := skill{name: path.Base(dir), dir: dir}
	fm, body, ok := frontMatter(text)
	if !ok {
		s.body = text
		return s
	}
	s.body = body
	if v := fm["name"]; v != "" {
		s.name = v
	}
	s.description = fm["description"]
	return s
}

// frontMatter parses a leading "---" block of simple YAML (key: value,
// quoted values, and | or > block scalars) and returns the fields and the
// rest of the text.
func frontMatter(text string) (map[string]string, string, bool) {
	t := strings.TrimPrefix(text, "\ufeff")
	if !strings.HasPrefix(t, "---") {
		return nil, text, false
	}
	lines := strings.Split(t, "\n")
	if strings.TrimSpace(lines[0]) != "---" {
		return nil, text, false
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if l := strings.TrimSpace(lines[i]); l == "---" || l == "..." {
			end = i
			break
		}
	}
	if end < 0 {
		return nil, text, false
	}
	fm := map[string]string{}
	for i := 1; i < end; i++ {
		l := strings.TrimRight(lines[i], "\r")
		if l == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		// Indented continuation lines.
		var cont []string
		for i+1 < end && (strings.HasPrefix(lines[i+1], " ") || strings.HasPrefix(lines[i+1], "\t") || strings.TrimSpace(lines[i+1]) == "") {
			i++
			cont = append(cont, strings.TrimSpace(strings.TrimRight(lines[i], "\r")))
		}
		for len(cont) > 0 && cont[len(cont)-1] == "" {
			cont = cont[:len(cont)-1]
		}
		switch {
		case strings.HasPrefix(v, "|"):
			v = strings.Join(cont, "\n")
		case strings.HasPrefix(v, ">"):
			v = strings.Join(cont, " ")
		default:
			if len(cont) > 0 {
				v = strings.TrimSpace(v + " " + strings.Join(cont, " "))
			}
			v = unquote(v)
		}
		fm[k] = v
	}
	body := strings.Join(lines[end+1:], "\n")
	body = strings.TrimLeft(body, "\r\n")
	return fm, body, true
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		inner := v[1 : len(v)-1]
		if v[0] == '\'' {
			return strings.ReplaceAll(inner, "''", "'")
		}
		r := strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, "\n", `\t`, "\t")
		return r.Replace(inner)
	}
	return v
}
