package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// pinnedFields are the members of a tool definition a pin covers: what the
// tool tells the model and what it accepts and returns.
var pinnedFields = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// Pin is one pinned tool: the digest of its pinned fields and those fields
// (canonical JSON), kept so a review can say what changed.
type Pin struct {
	Digest string          `json:"digest"`
	Tool   json.RawMessage `json:"tool"`
}

// pinFile is the pin file's format.
type pinFile struct {
	Version int                       `json:"version"`
	Servers map[string]map[string]Pin `json:"servers"`
}

// Pins is the operator's accepted definitions of upstream tools, kept in a
// file (--pin-upstreams FILE). With pins, a tool whose definition does not
// match its pin, or that has none, is withheld: not listed and not callable
// until the operator accepts it (aiod upstream review --accept). The file
// is re-read when it changes on disk. Safe for concurrent use.
type Pins struct {
	path   string
	stored PinStore // where the pins live instead of the file (NewStoredPins)
	last   []byte   // the stored pins as last read

	mu      sync.Mutex
	servers map[string]map[string]Pin
	mod     time.Time
	size    int64
	checked time.Time
}

// LoadPins reads the pin file at path. A file that does not exist pins
// nothing (every tool is withheld until accepted); one that does not parse
// is an error.
func LoadPins(path string) (*Pins, error) {
	p := &Pins{path: path, servers: map[string]map[string]Pin{}}
	if err := p.load(); err != nil {
		return nil, err
	}
	return p, nil
}

// PinStore keeps the pins outside the file: the store every replica
// shares (--store), so that a tool accepted through one replica's admin
// page, or by aiod upstream review, is accepted on all of them.
type PinStore interface {
	GetPins(ctx context.Context) ([]byte, bool, error)
	PutPins(ctx context.Context, b []byte) error
	String() string
}

// NewStoredPins keeps the pins in st. When st has none yet, the pin file
// at seed (if any, and it exists) is copied in: the file an operator wrote
// before the store pins every replica alike. Afterwards the file is not
// read; the store is re-read at most once a second.
func NewStoredPins(st PinStore, seed string) (*Pins, error) {
	p := &Pins{stored: st, servers: map[string]map[string]Pin{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, ok, err := st.GetPins(ctx)
	if err != nil {
		return nil, fmt.Errorf("upstream pins in %s: %w", st, err)
	}
	if !ok && seed != "" {
		f, err := LoadPins(seed)
		if err != nil {
			return nil, err
		}
		if f.size != -1 {
			p.servers = f.servers
			if err := p.Save(); err != nil {
				return nil, err
			}
		}
	}
	if err := p.load(); err != nil {
		return nil, err
	}
	return p, nil
}

// Path is where the pins are: the pin file's path, or the store's name.
func (p *Pins) Path() string {
	if p.stored != nil {
		return "the store (" + p.stored.String() + ")"
	}
	return p.path
}

func (p *Pins) load() error {
	if p.stored != nil {
		return p.loadStored()
	}
	st, err := os.Stat(p.path)
	if errors.Is(err, fs.ErrNotExist) {
		p.servers, p.mod, p.size = map[string]map[string]Pin{}, time.Time{}, -1
		return nil
	}
	if err != nil {
		return fmt.Errorf("pin file: %w", err)
	}
	b, err := os.ReadFile(p.path)
	if err != nil {
		return fmt.Errorf("pin file: %w", err)
	}
	var f pinFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("pin file %s: %w", p.path, err)
	}
	if f.Version != 1 {
		return fmt.Errorf("pin file %s: version %d, want 1", p.path, f.Version)
	}
	if f.Servers == nil {
		f.Servers = map[string]map[string]Pin{}
	}
	p.servers, p.mod, p.size = f.Servers, st.ModTime(), st.Size()
	return nil
}

// parsePins reads the pin file format; where names the source.
func parsePins(b []byte, where string) (map[string]map[string]Pin, error) {
	var f pinFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("pin file %s: %w", where, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("pin file %s: version %d, want 1", where, f.Version)
	}
	if f.Servers == nil {
		f.Servers = map[string]map[string]Pin{}
	}
	return f.Servers, nil
}

// loadStored reads the pins from the store (none there: nothing pinned).
func (p *Pins) loadStored() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, ok, err := p.stored.GetPins(ctx)
	if err != nil {
		return fmt.Errorf("upstream pins in %s: %w", p.stored, err)
	}
	if !ok {
		p.servers, p.last = map[string]map[string]Pin{}, nil
		return nil
	}
	if bytes.Equal(b, p.last) {
		return nil
	}
	servers, err := parsePins(b, "in "+p.stored.String())
	if err != nil {
		return err
	}
	p.servers, p.last = servers, b
	return nil
}

// refresh re-reads the file when it changed, or the store (checked at
// most once a second). Pins that stop parsing, or a store that cannot be
// read, keep the last good pins.
func (p *Pins) refresh(log func(string, ...any)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.checked) < time.Second {
		return
	}
	p.checked = time.Now()
	if p.stored != nil {
		if err := p.loadStored(); err != nil && log != nil {
			log("upstream pins not reloaded (keeping the previous ones): %v", err)
		}
		return
	}
	st, err := os.Stat(p.path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && p.size == -1:
		return
	case err == nil && st.ModTime().Equal(p.mod) && st.Size() == p.size:
		return
	}
	if err := p.load(); err != nil && log != nil {
		log("upstream pins not reloaded (keeping the previous ones): %v", err)
	}
}

// check reports whether the tool definition def of server matches its pin,
// and why not.
func (p *Pins) check(server, tool string, def json.RawMessage) (bool, string) {
	digest, _, err := PinDigest(def)
	return p.compare(server, tool, digest, err)
}

// compare reports whether digest (or the error computing it) matches the
// pin of key under server, and why not.
func (p *Pins) compare(server, key, digest string, err error) (bool, string) {
	if err != nil {
		return false, "its definition cannot be pinned: " + err.Error()
	}
	p.mu.Lock()
	pin, ok := p.servers[server][key]
	p.mu.Unlock()
	switch {
	case !ok:
		return false, "it is new (not in the pin file)"
	case pin.Digest != digest:
		return false, "its definition changed since it was pinned"
	}
	return true, ""
}

// pinnedItemFields are the members of a prompt or a resource template a
// pin covers.
var pinnedItemFields = map[string][]string{
	KindPrompts:   {"name", "title", "description", "arguments"},
	KindTemplates: {"uriTemplate", "name", "title", "description", "mimeType", "annotations"},
}

// checkItem is check for a prompt or a resource template, pinned under key
// (pinKey) with the fields of its kind.
func (p *Pins) checkItem(server, key string, def json.RawMessage, kind string) (bool, string) {
	digest, _, err := digestOf(def, pinnedItemFields[kind])
	return p.compare(server, key, digest, err)
}

// ItemPin is the pin of a prompt or resource template definition of kind
// (KindPrompts, KindTemplates): its key in the pin file and the pin.
func ItemPin(kind string, def json.RawMessage) (string, Pin, error) {
	var h map[string]json.RawMessage
	if err := json.Unmarshal(def, &h); err != nil {
		return "", Pin{}, err
	}
	var key string
	if err := json.Unmarshal(h[keyField(kind)], &key); err != nil || key == "" {
		return "", Pin{}, fmt.Errorf("a %s entry without its %s", kind, keyField(kind))
	}
	digest, canon, err := digestOf(def, pinnedItemFields[kind])
	if err != nil {
		return "", Pin{}, err
	}
	return pinKey(kind, key), Pin{Digest: digest, Tool: canon}, nil
}

// PinDigest returns the digest ("sha256:<hex>") of a tool definition's
// pinned fields (name, title, description, inputSchema, outputSchema,
// annotations) and those fields as canonical JSON (keys sorted at every
// level, numbers as written).
func PinDigest(def json.RawMessage) (string, json.RawMessage, error) {
	return digestOf(def, pinnedFields)
}

func digestOf(def json.RawMessage, fields []string) (string, json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(def))
	dec.UseNumber()
	var all map[string]any
	if err := dec.Decode(&all); err != nil {
		return "", nil, err
	}
	kept := map[string]any{}
	for _, f := range fields {
		if v, ok := all[f]; ok {
			kept[f] = v
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(kept); err != nil { // maps: keys sorted
		return "", nil, err
	}
	canon := bytes.TrimSpace(buf.Bytes())
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), canon, nil
}

// Change is one difference between a server's tools and their pins.
type Change struct {
	Server string
	Tool   string
	Kind   string // "new", "changed" or "removed"
	// Fields are the pinned fields that differ ("changed"), in the order
	// of the pinned fields, with the old and the new value as JSON ("" for
	// absent).
	Fields []FieldChange
}

// FieldChange is one pinned field that changed.
type FieldChange struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// Review compares the definitions a server lists now with its pins, in
// the server's order, removed tools last (sorted).
func (p *Pins) Review(server string, defs []json.RawMessage) ([]Change, error) {
	p.mu.Lock()
	pinned := p.servers[server]
	p.mu.Unlock()
	var out []Change
	seen := map[string]bool{}
	for _, d := range defs {
		name, digest, canon, err := pinOf(d)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", server, err)
		}
		seen[name] = true
		pin, ok := pinned[name]
		switch {
		case !ok:
			out = append(out, Change{Server: server, Tool: name, Kind: "new"})
		case pin.Digest != digest:
			out = append(out, Change{Server: server, Tool: name, Kind: "changed", Fields: diffFields(pin.Tool, canon)})
		}
	}
	var gone []string
	for name := range pinned {
		if !seen[name] && !strings.Contains(name, ":") { // a prompt's or template's: ReviewItems
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		out = append(out, Change{Server: server, Tool: name, Kind: "removed"})
	}
	return out, nil
}

func pinOf(def json.RawMessage) (name, digest string, canon json.RawMessage, err error) {
	var h struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(def, &h); err != nil || h.Name == "" {
		return "", "", nil, fmt.Errorf("a tool without a name")
	}
	digest, canon, err = PinDigest(def)
	return h.Name, digest, canon, err
}

func diffFields(old, cur json.RawMessage) []FieldChange {
	var o, n map[string]json.RawMessage
	_ = json.Unmarshal(old, &o)
	_ = json.Unmarshal(cur, &n)
	var out []FieldChange
	for _, f := range pinnedFields {
		// The file is indented: compare compact forms.
		if ov, nv := compact(o[f]), compact(n[f]); ov != nv {
			out = append(out, FieldChange{Field: f, Old: ov, New: nv})
		}
	}
	return out
}

func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// Accept pins the definitions a server lists now, replacing its pins (a
// tool it no longer lists loses its pin).
func (p *Pins) Accept(server string, defs []json.RawMessage) error {
	pins := make(map[string]Pin, len(defs))
	for _, d := range defs {
		name, digest, canon, err := pinOf(d)
		if err != nil {
			return fmt.Errorf("server %q: %w", server, err)
		}
		pins[name] = Pin{Digest: digest, Tool: canon}
	}
	p.mu.Lock()
	for k, v := range p.servers[server] {
		if strings.Contains(k, ":") { // a prompt's or template's (AcceptItems)
			pins[k] = v
		}
	}
	p.servers[server] = pins
	p.mu.Unlock()
	return nil
}

// AcceptItems pins the prompts or resource templates (kind) a server lists
// now, replacing the server's pins of that kind.
func (p *Pins) AcceptItems(server, kind string, defs []json.RawMessage) error {
	pins := map[string]Pin{}
	for _, d := range defs {
		k, pin, err := ItemPin(kind, d)
		if err != nil {
			return fmt.Errorf("server %q: %w", server, err)
		}
		pins[k] = pin
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.servers[server]
	if cur == nil {
		cur = map[string]Pin{}
		p.servers[server] = cur
	}
	for k := range cur {
		if strings.HasPrefix(k, pinKey(kind, "")) {
			delete(cur, k)
		}
	}
	for k, v := range pins {
		cur[k] = v
	}
	return nil
}

// ReviewItems is Review for the prompts or resource templates (kind) a
// server lists now; Change.Tool is the item's pin key ("prompt:NAME",
// "resourceTemplate:URI-TEMPLATE").
func (p *Pins) ReviewItems(server, kind string, defs []json.RawMessage) ([]Change, error) {
	p.mu.Lock()
	pinned := p.servers[server]
	p.mu.Unlock()
	var out []Change
	seen := map[string]bool{}
	for _, d := range defs {
		k, pin, err := ItemPin(kind, d)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", server, err)
		}
		seen[k] = true
		old, ok := pinned[k]
		switch {
		case !ok:
			out = append(out, Change{Server: server, Tool: k, Kind: "new"})
		case old.Digest != pin.Digest:
			out = append(out, Change{Server: server, Tool: k, Kind: "changed", Fields: diffItemFields(old.Tool, pin.Tool, pinnedItemFields[kind])})
		}
	}
	var gone []string
	for k := range pinned {
		if strings.HasPrefix(k, pinKey(kind, "")) && !seen[k] {
			gone = append(gone, k)
		}
	}
	sort.Strings(gone)
	for _, k := range gone {
		out = append(out, Change{Server: server, Tool: k, Kind: "removed"})
	}
	return out, nil
}

func diffItemFields(old, cur json.RawMessage, fields []string) []FieldChange {
	var o, n map[string]json.RawMessage
	_ = json.Unmarshal(old, &o)
	_ = json.Unmarshal(cur, &n)
	var out []FieldChange
	for _, f := range fields {
		if ov, nv := compact(o[f]), compact(n[f]); ov != nv {
			out = append(out, FieldChange{Field: f, Old: ov, New: nv})
		}
	}
	return out
}

// Save writes the pins to the file, atomically and durably (a temporary
// file, fsynced, renamed over it, and the directory fsynced): a crash
// leaves the old pins or the new ones, never half a file.
func (p *Pins) Save() error {
	p.mu.Lock()
	b, err := json.MarshalIndent(pinFile{Version: 1, Servers: p.servers}, "", "  ")
	p.mu.Unlock()
	if err != nil {
		return err
	}
	if p.stored != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.stored.PutPins(ctx, b); err != nil {
			return fmt.Errorf("upstream pins in %s: %w", p.stored, err)
		}
		p.mu.Lock()
		p.last = b
		p.mu.Unlock()
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(p.path), ".pins-*")
	if err != nil {
		return fmt.Errorf("pin file: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	serr := tmp.Sync() // on disk before it replaces the old file
	cerr := tmp.Close()
	merr := os.Chmod(tmp.Name(), 0o644)
	if err := errors.Join(werr, serr, cerr, merr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("pin file: %w", err)
	}
	if err := os.Rename(tmp.Name(), p.path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("pin file: %w", err)
	}
	// the rename itself is durable once the directory is synced
	if d, err := os.Open(filepath.Dir(p.path)); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("pin file: %w", err)
		}
	}
	return nil
}
