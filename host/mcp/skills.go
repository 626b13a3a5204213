package mcp

import (
	"encoding/json"
	"strings"

	"github.com/aiodhq/aiod/host/skills"
)

// This file is the skills extension (SEP-2640,
// io.modelcontextprotocol/skills) over a skills.Store: skills/list,
// skills/get, the skill:// resources (read, listed, and read as
// directories). Served only when Options.Skills is set.

const extSkills = "io.modelcontextprotocol/skills"

type skillResource struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

type skillEntry struct {
	URI         string          `json:"uri"`
	Frontmatter map[string]any  `json:"frontmatter"`
	Resources   []skillResource `json:"resources"`
}

func entryOf(sk *skills.Skill) skillEntry {
	e := skillEntry{URI: sk.URI(), Frontmatter: sk.Frontmatter, Resources: make([]skillResource, len(sk.Files))}
	for i, f := range sk.Files {
		e.Resources[i] = skillResource{URI: sk.FileURI(f.Path), Digest: f.Digest, Size: f.Size}
	}
	return e
}

// cacheFields are the list-caching attributes of 2026-07-28 results.
func (rc *rpcCall) cacheFields(b []byte) []byte {
	if rc.era != Modern {
		return b
	}
	return spliceFields(b, `"ttlMs":0,"cacheScope":"public"`)
}

func (rc *rpcCall) skillsList() ([]byte, *Error) {
	st := rc.s.opts.Skills
	if st == nil {
		return nil, errf(CodeMethodNotFound, "Method not found: skills/list (no skills are served)")
	}
	if rc.p.Cursor != nil && *rc.p.Cursor != "" {
		return nil, errf(CodeInvalidParams, "Invalid params: unknown cursor")
	}
	list := st.List()
	out := struct {
		Skills []skillEntry `json:"skills"`
	}{Skills: make([]skillEntry, 0, len(list))}
	for _, sk := range list {
		out.Skills = append(out.Skills, entryOf(sk))
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, errf(CodeInternal, "internal error: "+err.Error())
	}
	return rc.cacheFields(b), nil
}

func (rc *rpcCall) skillsGet() ([]byte, *Error) {
	st := rc.s.opts.Skills
	if st == nil {
		return nil, errf(CodeMethodNotFound, "Method not found: skills/get (no skills are served)")
	}
	if rc.p.URI == nil || *rc.p.URI == "" {
		return nil, errf(CodeInvalidParams, "Invalid params: uri is required")
	}
	uri := *rc.p.URI
	name, ok := strings.CutPrefix(uri, skills.Scheme)
	name, rest, _ := strings.Cut(name, "/")
	var sk *skills.Skill
	if ok && rest == "SKILL.md" {
		sk = st.Get(name)
	}
	if sk == nil {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: unknown skill " + uri, Data: map[string]string{"uri": uri}}
	}
	b, err := json.Marshal(struct {
		Skill skillEntry `json:"skill"`
	}{entryOf(sk)})
	if err != nil {
		return nil, errf(CodeInternal, "internal error: "+err.Error())
	}
	return rc.cacheFields(b), nil
}

// skillRead answers resources/read of a skill:// URI (ok false: not one).
func (rc *rpcCall) skillRead(uri string) ([]byte, *Error, bool) {
	st := rc.s.opts.Skills
	if st == nil || !strings.HasPrefix(uri, skills.Scheme) {
		return nil, nil, false
	}
	b, mt, err := st.Read(uri)
	if err != nil {
		code := CodeInvalidParams
		if rc.era == Legacy {
			code = CodeLegacyNotFound
		}
		return nil, &Error{Code: code, Message: "Resource not found: " + uri, Data: map[string]string{"uri": uri}}, true
	}
	type content struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
		Text     string `json:"text,omitempty"`
		Blob     []byte `json:"blob,omitempty"`
	}
	c := content{URI: uri, MIMEType: mt}
	if strings.HasPrefix(mt, "text/") || mt == "application/json" {
		c.Text = string(b)
	} else {
		c.Blob = b
	}
	out, _ := json.Marshal(struct {
		Contents []content `json:"contents"`
	}{[]content{c}})
	if rc.era == Modern {
		out = spliceFields(out, `"ttlMs":0,"cacheScope":"public"`)
	}
	return out, nil, true
}

// skillResources are the SKILL.md resources of the served skills, as
// resources/list entries (a JSON array's elements, comma-separated).
func (s *Server) skillResources() []byte {
	st := s.opts.Skills
	if st == nil {
		return nil
	}
	var b []byte
	for _, sk := range st.List() {
		e, _ := json.Marshal(struct {
			URI         string `json:"uri"`
			Name        string `json:"name"`
			Description string `json:"description"`
			MIMEType    string `json:"mimeType"`
		}{sk.URI(), sk.Name, sk.Description, "text/markdown"})
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return b
}

// withSkillResources appends the skills' SKILL.md resources to a
// resources/list array.
func (s *Server) withSkillResources(items []byte) []byte {
	extra := s.skillResources()
	if len(extra) == 0 {
		return items
	}
	trimmed := strings.TrimSpace(string(items))
	if len(trimmed) < 2 || trimmed[len(trimmed)-1] != ']' {
		return items
	}
	body := strings.TrimSpace(trimmed[1 : len(trimmed)-1])
	out := make([]byte, 0, len(items)+len(extra)+2)
	out = append(out, '[')
	out = append(out, body...)
	if body != "" {
		out = append(out, ',')
	}
	out = append(out, extra...)
	return append(out, ']')
}

func (rc *rpcCall) directoryRead() ([]byte, *Error) {
	st := rc.s.opts.Skills
	if st == nil {
		return nil, errf(CodeMethodNotFound, "Method not found: resources/directory/read (no skills are served)")
	}
	if rc.p.URI == nil || *rc.p.URI == "" {
		return nil, errf(CodeInvalidParams, "Invalid params: uri is required")
	}
	if rc.p.Cursor != nil && *rc.p.Cursor != "" {
		return nil, errf(CodeInvalidParams, "Invalid params: unknown cursor")
	}
	uri := *rc.p.URI
	ents, err := st.ReadDir(uri)
	if err != nil {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: " + uri + " is not a served directory", Data: map[string]string{"uri": uri}}
	}
	type res struct {
		URI      string `json:"uri"`
		Name     string `json:"name"`
		MIMEType string `json:"mimeType"`
	}
	out := struct {
		Resources []res `json:"resources"`
	}{Resources: make([]res, len(ents))}
	for i, e := range ents {
		out.Resources[i] = res{e.URI, e.Name, e.MIMEType}
	}
	b, _ := json.Marshal(out)
	return rc.cacheFields(b), nil
}
