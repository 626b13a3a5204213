package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/aoi"
	"github.com/aiodhq/aiod/host/upstream"
)

// upstreamCmd is `aiod upstream review [--accept]`: it lists each upstream
// server's tools, prints how they differ from the pin file (new, changed
// with the fields that changed, removed), and with --accept pins them as
// they are now. Exit 0: nothing to review, or accepted; 1: changes are
// pending (or a failure); 2: usage.
func upstreamCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "login" || args[0] == "logout") {
		return upstreamLoginCmd(args, os.Stdin, stdout, stderr)
	}
	var ms *aoi.Stream
	if jsonl(args) {
		ms = startStream(stdout, "upstream review")
	}
	// fail ends the run with err: a usage error (code 2) or a failure (1)
	fail := func(code int, err error) int {
		if ms != nil {
			if code == 2 {
				return abort(ms, usageError{err}, "", "")
			}
			return abort(ms, err, aoi.CategoryUnavailable, "UPSTREAM_REVIEW_FAILED")
		}
		if code == 2 && !errors.Is(err, flag.ErrHelp) && !errors.As(err, new(reportedError)) {
			fmt.Fprintf(stderr, "aiod upstream review: %v\n", err)
		} else if code != 2 {
			fmt.Fprintf(stderr, "aiod upstream review: %v\n", err)
		}
		return code
	}
	if len(args) == 0 || args[0] != "review" {
		if ms == nil {
			fmt.Fprintln(stderr, "usage: aiod upstream review [--accept] [--mcp-servers JSON] [--policy FILE] [--data-dir DIR] [--pin-upstreams FILE] [--store URL] [--output jsonl]")
			return 2
		}
		return fail(2, errors.New("usage: aiod upstream review [--accept] [--mcp-servers JSON] [--policy FILE] [--data-dir DIR] [--pin-upstreams FILE] [--store URL] [--output jsonl]"))
	}
	s := &startFlags{fs: flag.NewFlagSet("aiod upstream review", flag.ContinueOnError), env: map[string]string{}}
	s.fs.SetOutput(stderr)
	s.fs.Var(&s.servers, "mcp-servers", "the upstream MCP servers, as for aiod start (env EXTRA_MCP_SERVERS)")
	s.env["mcp-servers"] = "EXTRA_MCP_SERVERS"
	s.str(&s.cfg.PolicyFile, "policy", "AIO_POLICY", "", "the policy file, whose \"upstreams\" are reviewed too")
	s.str(&s.cfg.DataDir, "data-dir", "AIO_DATA_DIR", "", "where command servers of the policy keep their directories, as for aiod start")
	s.str(&s.cfg.PinUpstreams, "pin-upstreams", "AIO_PIN_UPSTREAMS", "", "the pin file (required without --store)")
	s.str(&s.cfg.Store, "store", "AIO_STORE", "", "the shared store (redis://HOST:PORT[/DB]) whose pins the replicas read, as for aiod start: the pins are reviewed and accepted there")
	s.str(&s.cfg.UpstreamKeyFile, "upstream-key-file", "AIO_UPSTREAM_KEY_FILE", "", "the key file of the OAuth logins' tokens, as for aiod start (without it, servers that log in are reviewed as unreachable)")
	s.duration(&s.cfg.UpstreamListTimeout, "upstream-list-timeout", "AIO_UPSTREAM_LIST_TIMEOUT", upstream.DefaultListTimeout, "longest to wait for one server's tools/list")
	accept := s.fs.Bool("accept", false, "pin every tool as the servers list it now")
	output := outputFlag(s.fs)
	if err := s.parse(args[1:], os.LookupEnv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if ms != nil {
				return ms.Finish(true, nil)
			}
			return 0
		}
		return fail(2, err)
	}
	if err := checkOutput(*output); err != nil {
		return fail(2, err)
	}
	if s.cfg.PinUpstreams == "" && s.cfg.Store == "" {
		return fail(2, errors.New("--pin-upstreams (AIO_PIN_UPSTREAMS) or --store (AIO_STORE) is required"))
	}
	for _, w := range s.servers.warns {
		if ms != nil {
			ms.Warning("SERVER_SKIPPED", w.String())
		} else {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
	}
	pins, closePins, err := host.ReviewPins(context.Background(), s.cfg.Store, s.cfg.PinUpstreams)
	if err != nil {
		if ms != nil {
			return abort(ms, err, aoi.CategoryValidation, "PINS_UNREADABLE")
		}
		return fail(1, err)
	}
	defer closePins()
	servers, stdio, err := host.ReviewUpstreams(s.cfg.Upstreams, s.cfg.PolicyFile, s.cfg.DataDir, s.cfg.UpstreamKeyFile)
	if err != nil {
		return fail(1, err)
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
			if ms != nil {
				ms.Event("server", map[string]any{"name": srv.Name, "url": srv.URL, "reachable": false})
				ms.Warning("SERVER_UNREACHABLE", srv.String()+": not reachable; its pins are kept")
			} else {
				fmt.Fprintf(stdout, "%s: not reachable; its pins are kept\n", srv)
			}
			continue
		}
		changes, err := pins.Review(srv.Name, defs)
		if err != nil {
			return fail(1, err)
		}
		// the prompts and resource templates of a policy server are pinned
		// beside its tools ("prompt:NAME", "resourceTemplate:URI-TEMPLATE")
		items := map[string][]json.RawMessage{}
		for _, kind := range []string{upstream.KindPrompts, upstream.KindTemplates} {
			if items[kind], err = set.ServerItems(ctx, srv.Name, kind); err != nil {
				return fail(1, err)
			}
			more, err := pins.ReviewItems(srv.Name, kind, items[kind])
			if err != nil {
				return fail(1, err)
			}
			changes = append(changes, more...)
		}
		if ms != nil {
			ms.Event("server", map[string]any{"name": srv.Name, "url": srv.URL, "reachable": true, "tools": len(defs), "pending": len(changes)})
			for _, c := range changes {
				fields := []map[string]any{}
				for _, f := range c.Fields {
					fields = append(fields, map[string]any{"field": f.Field, "old": rawOrNull(f.Old), "new": rawOrNull(f.New)})
				}
				ms.Event("change", map[string]any{"server": srv.Name, "tool": c.Tool, "kind": c.Kind, "fields": fields})
			}
		} else {
			fmt.Fprintf(stdout, "%s: %d tools, %d to review\n", srv, len(defs), len(changes))
			for _, c := range changes {
				fmt.Fprintf(stdout, "  %-8s %s\n", c.Kind, c.Tool)
				for _, f := range c.Fields {
					fmt.Fprintf(stdout, "           %s:\n             - %s\n             + %s\n", f.Field, orAbsent(f.Old), orAbsent(f.New))
				}
			}
		}
		pending += len(changes)
		if *accept && len(changes) > 0 {
			if err := pins.Accept(srv.Name, defs); err != nil {
				return fail(1, err)
			}
			for kind, defs := range items {
				if err := pins.AcceptItems(srv.Name, kind, defs); err != nil {
					return fail(1, err)
				}
			}
		}
	}
	accepted := 0
	if *accept && pending > 0 {
		if err := pins.Save(); err != nil {
			return fail(1, err)
		}
		accepted = pending
	}
	if ms != nil {
		if pending > 0 && !*accept {
			e := aoi.Fail(aoi.CategoryConflict, "CHANGES_PENDING", "%d changes pending", pending)
			e.Hint = "review the change events, then run with --accept to pin the tools as they are now"
			ms.Error(e)
		}
		return ms.Finish(pending == 0 || *accept, map[string]any{"pending": pending, "accepted": accepted})
	}
	switch {
	case pending == 0:
		fmt.Fprintln(stdout, "nothing to review")
		return 0
	case *accept:
		fmt.Fprintf(stdout, "accepted %d changes into %s\n", pending, pins.Path())
		return 0
	}
	fmt.Fprintf(stdout, "%d changes pending: run with --accept to pin the tools as they are now\n", pending)
	return 1
}

// rawOrNull is a pinned field's JSON value ("" for absent: null; what
// is not JSON, as a string).
func rawOrNull(v string) json.RawMessage {
	switch {
	case v == "":
		return json.RawMessage("null")
	case !json.Valid([]byte(v)):
		b, _ := json.Marshal(v)
		return b
	}
	return json.RawMessage(v)
}

func orAbsent(v string) string {
	if v == "" {
		return "(absent)"
	}
	return v
}
