package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/upstream"
)

// upstreamCmd is `aiod upstream review [--accept]`: it lists each upstream
// server's tools, prints how they differ from the pin file (new, changed
// with the fields that changed, removed), and with --accept pins them as
// they are now. Exit 0: nothing to review, or accepted; 1: changes are
// pending (or a failure); 2: usage.
func upstreamCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "review" {
		fmt.Fprintln(stderr, "usage: aiod upstream review [--accept] [--mcp-servers JSON] [--policy FILE] [--data-dir DIR] [--pin-upstreams FILE]")
		return 2
	}
	s := &startFlags{fs: flag.NewFlagSet("aiod upstream review", flag.ContinueOnError), env: map[string]string{}}
	s.fs.SetOutput(stderr)
	s.fs.Var(&s.servers, "mcp-servers", "the upstream MCP servers, as for aiod start (env EXTRA_MCP_SERVERS)")
	s.env["mcp-servers"] = "EXTRA_MCP_SERVERS"
	s.str(&s.cfg.PolicyFile, "policy", "AIO_POLICY", "", "the policy file, whose \"upstreams\" are reviewed too")
	s.str(&s.cfg.DataDir, "data-dir", "AIO_DATA_DIR", "", "where command servers of the policy keep their directories, as for aiod start")
	s.str(&s.cfg.PinUpstreams, "pin-upstreams", "AIO_PIN_UPSTREAMS", "", "the pin file (required)")
	s.duration(&s.cfg.UpstreamListTimeout, "upstream-list-timeout", "AIO_UPSTREAM_LIST_TIMEOUT", upstream.DefaultListTimeout, "longest to wait for one server's tools/list")
	accept := s.fs.Bool("accept", false, "pin every tool as the servers list it now")
	if err := s.parse(args[1:], os.LookupEnv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if !errors.As(err, new(reportedError)) {
			fmt.Fprintf(stderr, "aiod upstream review: %v\n", err)
		}
		return 2
	}
	if s.cfg.PinUpstreams == "" {
		fmt.Fprintln(stderr, "aiod upstream review: --pin-upstreams (AIO_PIN_UPSTREAMS) is required")
		return 2
	}
	for _, w := range s.servers.warns {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	pins, err := upstream.LoadPins(s.cfg.PinUpstreams)
	if err != nil {
		fmt.Fprintf(stderr, "aiod upstream review: %v\n", err)
		return 1
	}
	servers, stdio, err := host.ReviewUpstreams(s.cfg.Upstreams, s.cfg.PolicyFile, s.cfg.DataDir)
	if err != nil {
		fmt.Fprintf(stderr, "aiod upstream review: %v\n", err)
		return 1
	}
	opts := upstream.Options{ListTimeout: s.cfg.UpstreamListTimeout,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ClientName: "aiod", ClientVersion: host.Version}
	stdio(&opts)
	set := upstream.New(servers, opts)
	defer set.Close()
	ctx := context.Background()
	pending := 0
	for _, srv := range servers {
		defs, reachable, err := set.ServerTools(ctx, srv.Name)
		if err != nil || !reachable {
			fmt.Fprintf(stdout, "%s: not reachable; its pins are kept\n", srv)
			continue
		}
		changes, err := pins.Review(srv.Name, defs)
		if err != nil {
			fmt.Fprintf(stderr, "aiod upstream review: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: %d tools, %d to review\n", srv, len(defs), len(changes))
		for _, c := range changes {
			fmt.Fprintf(stdout, "  %-8s %s\n", c.Kind, c.Tool)
			for _, f := range c.Fields {
				fmt.Fprintf(stdout, "           %s:\n             - %s\n             + %s\n", f.Field, orAbsent(f.Old), orAbsent(f.New))
			}
		}
		pending += len(changes)
		if *accept && len(changes) > 0 {
			if err := pins.Accept(srv.Name, defs); err != nil {
				fmt.Fprintf(stderr, "aiod upstream review: %v\n", err)
				return 1
			}
		}
	}
	switch {
	case pending == 0:
		fmt.Fprintln(stdout, "nothing to review")
		return 0
	case *accept:
		if err := pins.Save(); err != nil {
			fmt.Fprintf(stderr, "aiod upstream review: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "accepted %d changes into %s\n", pending, pins.Path())
		return 0
	}
	fmt.Fprintf(stdout, "%d changes pending: run with --accept to pin the tools as they are now\n", pending)
	return 1
}

func orAbsent(v string) string {
	if v == "" {
		return "(absent)"
	}
	return v
}
