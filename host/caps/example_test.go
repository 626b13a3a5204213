package caps_test

import (
	"fmt"

	"github.com/aiodhq/aiod/host/caps"
)

// A plugin asks for its notes folder read-write, the whole home directory
// read-only and two programs; the operator allows the home directory
// read-write and only git. The grant is the intersection.
func ExamplePolicy_Allow() {
	m, err := caps.ParseManifest([]byte(`{
		"name": "notes",
		"abi": 1,
		"tools": [{"name": "notes_write", "inputSchema": {"type": "object"}}],
		"capabilities": {
			"files": {"paths": [
				{"path": "$HOME/notes", "mode": "rw"},
				{"path": "$HOME", "mode": "ro"}
			]},
			"process": {"commands": ["git", "rm"], "cwd": ["$HOME/notes"]}
		},
		"limits": {"timeout_ms": 3600000}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := caps.ParsePolicy([]byte(`{
		"plugins": {
			"notes": {
				"files": {"paths": [{"path": "$HOME", "mode": "rw"}]},
				"process": {"commands": ["git"], "cwd": ["$HOME"]}
			}
		},
		"limits": {"max_timeout_ms": 60000}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	g := p.Allow(m, caps.Env{Home: "/home/ada", Tmp: "/tmp"})
	fmt.Println("families:", g.GrantedFamilies())
	for _, r := range g.FileRoots {
		fmt.Printf("root: %s writable=%v\n", r.Path, r.Writable)
	}
	fmt.Println("commands:", g.Commands, "in", g.CwdRoots)
	fmt.Println("timeout:", g.Timeout, "memory MiB:", g.MemoryPages/16)

	// A plugin the policy does not mention gets no family at all.
	other := *m
	other.Name = "other"
	fmt.Println("other plugin:", p.Allow(&other, caps.Env{Home: "/home/ada", Tmp: "/tmp"}).GrantedFamilies())
	// Output:
	// families: [files process]
	// root: /home/ada/notes writable=true
	// root: /home/ada writable=false
	// commands: [git] in [/home/ada/notes]
	// timeout: 1m0s memory MiB: 256
	// other plugin: []
}
