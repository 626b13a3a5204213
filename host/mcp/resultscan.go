package mcp

import "encoding/json"

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
// values. ok is false when the scan does not see a JSON object.
func scanTop(b []byte) (top topScan, ok bool) {
	top.metaAt = -1
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return top, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return top, true
	}
	for {
		key, vstart, end, ok := scanMember(b, i)
		if !ok {
			return top, false
		}
		switch key {
		case "resultType":
			top.hasType = true
		case "_meta":
			top.hasMeta = true
			if b[vstart] == '{' && !hasMember(b[vstart:end], metaServerInfo) {
				top.metaAt = vstart + 1
			}
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return top, false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return top, true
		default:
			return top, false
		}
	}
}

// hasMember reports whether the object obj has a top-level member key.
func hasMember(obj []byte, key string) bool {
	i := skipWS(obj, 1)
	if i < len(obj) && obj[i] == '}' {
		return false
	}
	for {
		k, _, end, ok := scanMember(obj, i)
		if !ok {
			return false
		}
		if k == key {
			return true
		}
		i = skipWS(obj, end)
		if i >= len(obj) || obj[i] != ',' {
			return false
		}
		i = skipWS(obj, i+1)
	}
}

// scanMember reads the member starting at b[i] (its key's '"'): the key,
// where its value starts and where the member ends.
func scanMember(b []byte, i int) (key string, vstart, end int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, 0, false
	}
	kend := skipStr(b, i)
	if kend < 0 {
		return "", 0, 0, false
	}
	key = string(b[i+1 : kend-1])
	for _, c := range b[i+1 : kend-1] {
		if c == '\\' { // an escaped key: decode it
			if json.Unmarshal(b[i:kend], &key) != nil {
				return "", 0, 0, false
			}
			break
		}
	}
	j := skipWS(b, kend)
	if j >= len(b) || b[j] != ':' {
		return "", 0, 0, false
	}
	vstart = skipWS(b, j+1)
	end = skipVal(b, vstart)
	return key, vstart, end, end > vstart
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipStr returns the index after the string starting at b[i], or -1.
func skipStr(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipVal returns the index after the JSON value starting at b[i], or -1.
func skipVal(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipStr(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				k := skipStr(b, j)
				if k < 0 {
					return -1
				}
				j = k - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i // a number, true, false, null
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
