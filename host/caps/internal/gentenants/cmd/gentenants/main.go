// Command gentenants writes spec/tenants.schema.json; it runs from
// host/caps/tenants.go: go generate ./host/caps.
package main

import (
	"fmt"
	"os"

	"github.com/aiodhq/aiod/host/caps/internal/gentenants"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gentenants OUT.json")
		os.Exit(2)
	}
	b, err := gentenants.Generate()
	if err == nil {
		err = os.WriteFile(os.Args[1], b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
