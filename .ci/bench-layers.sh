#!/usr/bin/env bash
# bench-layers.sh BINARY PROFILE REQUESTS: where an HTTP request's CPU goes
# in aiod, per layer, in µs per request: a CPU profile of BINARY taken over
# REQUESTS requests (go tool pprof's cumulative samples of each layer's
# entry function, less those of the next layer's). pprof cannot walk from
# wasm machine code back into Go, so the guest's code is counted apart
# (runtime._ExternalCode), beside the wazero call that runs it. The last
# line is the host's own share: every layer between HTTP and the guest.
# make bench runs it on the C echo's aiod (BENCHMARKS.md, "Where a
# request's CPU goes").
set -euo pipefail
(($# == 3)) || { sed -n '2,10p' "$0"; exit 2; }
go tool pprof -top -cum -nodecount=1000000 "$1" "$2" 2>/dev/null | awk -v n="$3" '
function sec(s) { if (s ~ /ms$/) return s / 1000; if (s ~ /µs$|us$/) return s / 1e6; return s + 0 }
/Total samples/ { for (i = 1; i <= NF; i++) if ($i == "=") total = sec($(i + 1)) }
NF >= 6 && $2 ~ /%$/ { c[$6] = sec($4) }
function g(name) { return (name in c) ? c[name] : 0 }
function row(label, v) { printf "%-72s %6.2f\n", label, v / n * 1e6 }
END {
  if (n <= 0 || total <= 0) { print "bench-layers: no samples or no requests" > "/dev/stderr"; exit 1 }
  serve = g("github.com/valyala/fasthttp.(*Server).serveConn")
  fh = g("github.com/gofiber/fiber/v2.(*App).handler")
  hm = g("github.com/aiodhq/aiod/host/server.(*Server).handleMCP")
  ms = g("github.com/aiodhq/aiod/host/mcp.(*Server).Serve")
  dec = g("github.com/aiodhq/aiod/host/mcp.decodeMessage")
  disp = g("github.com/aiodhq/aiod/host/mcp.(*rpcCall).dispatch")
  rep = g("github.com/aiodhq/aiod/host/mcp.(*rpcCall).reply")
  tc = g("github.com/aiodhq/aiod/host/mcp.(*rpcCall).toolsCall")
  reg = g("github.com/aiodhq/aiod/host/plugin.(*Registry).CallTool")
  ic = g("github.com/aiodhq/aiod/host/runtime/wazero.(*instance).Call")
  ext = g("runtime._ExternalCode")
  gc = g("runtime.gcBgMarkWorker")
  row("HTTP: fasthttp without the handler, syscalls included", serve - fh)
  row("  of it write(2) and read(2)", g("syscall.write") + g("syscall.read"))
  row("Fiber routing, the draining check, the Host/Origin/query guard", fh - hm)
  row("handleMCP: quota admit, the exchange, forwarded and answer headers", hm - ms)
  row("JSON-RPC decode", dec)
  row("transport and era checks", ms - dec - disp - rep)
  row("tenancy, metrics and audit middleware, the method table", disp - tc)
  row("catalogue wrappers (tenant, tool search, hooks)", tc - reg)
  row("registry: pool, deadline, output check", reg - ic)
  row("wazero call: guest entry and exit, host side", ic)
  row("the guest code (runtime._ExternalCode)", ext)
  row("result splice (the envelope)", rep)
  row("GC background marking", gc)
  row("the rest: scheduler, GC assists, netpoll", total - serve - ext - gc)
  row("total", total)
  row("host share: every layer between HTTP and the guest", fh) # the rows from Fiber to the splice
}'
