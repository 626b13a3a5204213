package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/aoi"
	"github.com/aiodhq/aiod/host/doctor"
	"github.com/aiodhq/aiod/host/proc"
)

// containment asks a process manager, as aiod start makes one, how it
// would contain the programs it runs.
func containment() doctor.Check {
	m := proc.New(proc.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer m.Close()
	return doctor.ContainmentCheck(m.Containment())
}

// doctorCmd is `aiod doctor [--json] [--lockdown]`: what this machine has
// for each plane, by the probes behind GET /v1/capabilities (host/doctor),
// and with --lockdown what a locked-down start would be refused for.
func doctorCmd(args []string, stdout, stderr io.Writer) int {
	var ms *aoi.Stream
	if jsonl(args) {
		ms = startStream(stdout, "doctor")
	}
	fs := flag.NewFlagSet("aiod doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	output := outputFlag(fs)
	cacheDir := fs.String("cache-dir", os.Getenv("AIO_CACHE_DIR"), "compiled-module cache directory to check (default: <user cache dir>/aiod/wazero, as aiod start)")
	workspace := fs.String("workspace", os.Getenv("AIO_WORKSPACE"), "workspace directory to check")
	lockdownEnv, err := strconv.ParseBool(cmp.Or(os.Getenv("AIO_LOCKDOWN"), "false"))
	if err != nil {
		err = fmt.Errorf("AIO_LOCKDOWN=%q is not a boolean", os.Getenv("AIO_LOCKDOWN"))
		if ms != nil {
			return abort(ms, usageError{err}, "", "")
		}
		fmt.Fprintf(stderr, "aiod doctor: %v\n", err)
		return 2
	}
	lockdown := fs.Bool("lockdown", lockdownEnv, "also check what aiod start --lockdown needs (bubblewrap, cgroups, --data-dir, --audit-log)")
	dataDir := fs.String("data-dir", os.Getenv("AIO_DATA_DIR"), "lockdown: the data directory aiod start is given")
	auditLog := fs.String("audit-log", os.Getenv("AIO_AUDIT_LOG"), "lockdown: the audit log aiod start is given")
	if err := fs.Parse(args); err != nil {
		if ms != nil {
			if errors.Is(err, flag.ErrHelp) {
				return ms.Finish(true, nil)
			}
			return abort(ms, usageError{err}, "", "")
		}
		return 2
	}
	if err := checkOutput(*output); err != nil || fs.NArg() > 0 {
		if err == nil {
			err = usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
		}
		if ms != nil {
			return abort(ms, err, "", "")
		}
		fmt.Fprintf(stderr, "aiod doctor: %v\n", err)
		return 2
	}
	if *cacheDir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			*cacheDir = filepath.Join(d, "aiod", "wazero")
		}
	}
	o := doctor.FromEnv(os.Getenv)
	o.CacheDir, o.Workspace, o.Cgroups = *cacheDir, *workspace, containment
	if *lockdown {
		o.Lockdown = &doctor.Lockdown{DataDir: *dataDir, AuditLog: *auditLog}
	}
	r := doctor.Probe(context.Background(), o)
	if ms != nil {
		failing := 0
		for _, c := range r.Checks {
			more := map[string]any{}
			if len(c.Missing) > 0 {
				more["missing"] = c.Missing
			}
			if !c.OK {
				failing++
			}
			ms.Check(c.Name, c.OK, c.Detail, more)
		}
		for _, name := range doctor.Domains {
			d := r.Domains[name]
			ms.Event("plane", map[string]any{"name": name, "status": d.Status, "missing": nonNilStrings(d.Missing), "warnings": nonNilStrings(d.Warnings)})
		}
		return ms.Finish(true, map[string]any{"failing_checks": failing})
	}
	if *asJSON {
		out := map[string]any{"version": host.Version, "checks": r.Checks, "capabilities": r.DomainsMap(), "at": r.At}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "aiod doctor: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stdout, "aiod %s doctor\n\nchecks:\n", host.VersionString())
	for _, c := range r.Checks {
		mark := "ok"
		if !c.OK {
			mark = "--"
		}
		fmt.Fprintf(stdout, "  %-3s %-14s %s\n", mark, c.Name, c.Detail)
		for _, m := range c.Missing {
			fmt.Fprintf(stdout, "  %-3s %-14s - %s\n", "", "", m)
		}
	}
	fmt.Fprintf(stdout, "\nplanes:\n")
	for _, name := range doctor.Domains {
		d := r.Domains[name]
		line := fmt.Sprintf("  %-17s %-9s", name, d.Status)
		if len(d.Missing) > 0 {
			line += " missing: " + strings.Join(d.Missing, ", ")
		}
		fmt.Fprintln(stdout, strings.TrimRight(line, " "))
		for _, w := range d.Warnings {
			fmt.Fprintf(stdout, "  %17s ! %s\n", "", w)
		}
	}
	return 0
}

func nonNilStrings(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
