package caps

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// ErrNotPinned marks a plugin whose module the policy does not pin (or
// pins to another digest) when pins are required (lockdown).
var ErrNotPinned = errors.New("not pinned by the policy")

// splitPins takes the "sha256" and "oci" members out of each entry of a
// policy document's "plugins" (`"plugins": {"echo": {"sha256": "<hex>",
// "oci": "<repo>@sha256:<hex>", ...}}`): it returns the pins and the OCI
// references by plugin name and the document without them, for the strict
// decoding of the rest. A document with neither is returned as it is; one
// that is not an object of objects is left to that decoding to refuse.
func splitPins(data []byte) ([]byte, map[string]string, map[string]string, error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil || top["plugins"] == nil {
		return data, nil, nil, nil
	}
	var plugins map[string]json.RawMessage
	if json.Unmarshal(top["plugins"], &plugins) != nil {
		return data, nil, nil, nil
	}
	pins, refs := map[string]string{}, map[string]string{}
	for name, raw := range plugins {
		var entry map[string]json.RawMessage
		if json.Unmarshal(raw, &entry) != nil || (entry["sha256"] == nil && entry["oci"] == nil) {
			continue
		}
		if entry["sha256"] != nil {
			var pin string
			if err := json.Unmarshal(entry["sha256"], &pin); err != nil || !sha256RE.MatchString(pin) {
				return nil, nil, nil, fmt.Errorf("plugin %s: sha256 must be 64 lowercase hex digits (the module's sha256)", name)
			}
			pins[name] = pin
			delete(entry, "sha256")
		}
		if entry["oci"] != nil {
			var ref string
			if err := json.Unmarshal(entry["oci"], &ref); err != nil || !ociRefRE.MatchString(ref) {
				return nil, nil, nil, fmt.Errorf("plugin %s: oci must be a reference by digest, REGISTRY/REPOSITORY@sha256:<64 hex digits> (aiod plugin push prints it)", name)
			}
			refs[name] = ref
			delete(entry, "oci")
		}
		b, err := json.Marshal(entry)
		if err != nil {
			return nil, nil, nil, err
		}
		plugins[name] = b
	}
	if len(pins) == 0 && len(refs) == 0 {
		return data, nil, nil, nil
	}
	b, err := json.Marshal(plugins)
	if err != nil {
		return nil, nil, nil, err
	}
	top["plugins"] = b
	out, err := json.Marshal(top)
	if len(pins) == 0 {
		pins = nil
	}
	if len(refs) == 0 {
		refs = nil
	}
	return out, pins, refs, err
}

// ociRefRE is a reference by digest: a registry host (and port), a
// repository path of lowercase components, an optional tag, and the
// digest.
var ociRefRE = regexp.MustCompile(`^[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+(:[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?@sha256:[0-9a-f]{64}$`)

// CheckPin reports whether the policy pins plugin name to the module
// digest (hex sha256): nil if it does, else an error wrapping
// ErrNotPinned that says what to write in the policy.
func (p *Policy) CheckPin(name, digest string) error {
	pin, ok := p.Pins[name]
	switch {
	case !ok:
		return fmt.Errorf("plugin %s: %w: add \"plugins\": {%q: {\"sha256\": %q}}", name, ErrNotPinned, name, digest)
	case pin != digest:
		return fmt.Errorf("plugin %s: %w: its module's sha256 %s does not match the pin %s", name, ErrNotPinned, digest, pin)
	}
	return nil
}
