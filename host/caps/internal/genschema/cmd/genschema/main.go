// Command genschema writes the plugin manifest's JSON Schema
// (spec/manifest/v1/schema.json) from the Go types of package caps. It runs
// from host/caps/generate.go: go generate ./host/caps.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/aiodhq/aiod/host/caps/internal/genschema"
)

func main() {
	out := flag.String("o", "", "write the schema to this file (default: standard output)")
	flag.Parse()
	b, err := genschema.Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *out == "" {
		_, err = os.Stdout.Write(b)
	} else {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
