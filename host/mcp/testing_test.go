package mcp

import "strings"

// mapHeaders is a Headers over a map with lower-case keys.
type mapHeaders map[string]string

func (m mapHeaders) Get(name string) string { return m[strings.ToLower(name)] }
