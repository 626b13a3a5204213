package mcp

import "github.com/aiodhq/aiod/sdk/jsonx"

// topScan is what modernResult needs of a result object's top level.
type topScan struct {
	hasType bool // a top-level "resultType"
	hasMeta bool // a top-level "_meta"
	// metaAt is the index just after the '{' of the top-level _meta object
	// when that object has no serverInfo member, else -1 (no _meta, or one
	// that names a server already or is not an object: left alone).
	metaAt int
}

// scanTop walks the members of a result object without decoding their
// values (jsonx.Walk). ok is false when the scan does not see a JSON
// object.
func scanTop(b []byte) (top topScan, ok bool) {
	top.metaAt = -1
	err := jsonx.Walk(b, func(m jsonx.Member) bool {
		switch m.Key {
		case "resultType":
			top.hasType = true
		case "_meta":
			top.hasMeta = true
			if b[m.Value] == '{' && !hasMember(b[m.Value:m.End], metaServerInfo) {
				top.metaAt = m.Value + 1
			}
		}
		return true
	})
	if err != nil {
		return topScan{metaAt: -1}, false
	}
	return top, true
}

// hasMember reports whether the object obj has a top-level member key.
func hasMember(obj []byte, key string) bool {
	found := false
	_ = jsonx.Walk(obj, func(m jsonx.Member) bool {
		found = m.Key == key
		return !found
	})
	return found
}
