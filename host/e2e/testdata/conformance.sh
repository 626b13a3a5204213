#!/usr/bin/env bash
# conformance.sh URL: runs the official MCP conformance suites against ONE running server:
#
#   legacy-0116   @modelcontextprotocol/conformance 0.1.16, default (active) server suite
#   req-2025      @modelcontextprotocol/conformance 0.2.0-alpha.12, --requirements 2025-11-25
#   req-2026      @modelcontextprotocol/conformance 0.2.0-alpha.12, --requirements 2026-07-28
#   sep-2640-*    0.2.0-alpha.12's skills extension scenarios (not in any requirements list), one
#                 --scenario run each: the server must serve the skills of testdata/skills
#
# with Node 22 (installed by ./install.sh) first on PATH. Each suite's pass or fail is its exit
# code: 1 when any scored check FAILED, 0 otherwise (warnings, skipped and not-scored scenarios such
# as the tasks-* extension do not fail a run). All selected suites run; the script exits 1 if any
# failed, and prints every suite's `Total:` line and verdict at the end.
#
# Environment:
#   AIOD_NODE_TOOLS         where install.sh put the tools (default <repo>/.tools/node)
#   CONFORMANCE_SUITES      space-separated subset of "legacy-0116 req-2025 req-2026
#                           sep-2640-skills-enumeration sep-2640-skills-directory
#                           sep-2640-skills-manifest" (default: all)
#   CONFORMANCE_OUT         if set, each suite's full log and checks.json files go under it
#   CONFORMANCE_ARGS        extra arguments for every run (for example --verbose)
#
# The URL must be on localhost: the dns-rebinding-protection scenario only works there.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
url=${1:?usage: conformance.sh URL}
nodebin=$("$here/install.sh") || { echo "conformance.sh: install.sh failed" >&2; exit 2; }
tools=$(cd "$nodebin/../../.." && pwd)
export PATH=$nodebin:$PATH

suites=${CONFORMANCE_SUITES:-legacy-0116 req-2025 req-2026 sep-2640-skills-enumeration sep-2640-skills-directory sep-2640-skills-manifest}
out=${CONFORMANCE_OUT:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2206
extra=(${CONFORMANCE_ARGS:-})

summary=()
failed=0
for s in $suites; do
  case $s in
    legacy-0116) pkg=conformance-0116; args=() ;;
    req-2025) pkg=conformance-alpha12; args=(--requirements 2025-11-25) ;;
    req-2026) pkg=conformance-alpha12; args=(--requirements 2026-07-28) ;;
    sep-2640-*) pkg=conformance-alpha12; args=(--scenario "$s") ;;
    *) echo "conformance.sh: unknown suite $s" >&2; exit 2 ;;
  esac
  log=$tmp/$s.log
  odir=()
  if [[ -n $out ]]; then
    mkdir -p "$out/$s"
    odir=(-o "$out/$s")
  fi
  echo "=== conformance suite $s: $pkg server --url $url ${args[*]}" >&2
  # The suites are quick (seconds); the timeout only guards against a hung server.
  timeout 600 node "$tools/node_modules/$pkg/dist/index.js" server --url "$url" "${args[@]}" "${odir[@]}" "${extra[@]}" \
    >"$log" 2>&1
  rc=$?
  cat "$log"
  [[ -n $out ]] && cp "$log" "$out/$s.log"
  total=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^(Total|Passed): ' | tail -1)
  if ((rc == 0)); then verdict=PASS; else verdict="FAIL (exit $rc)"; failed=1; fi
  summary+=("$s: ${total:-no Total line} -> $verdict")
done

echo "=== conformance summary for $url"
for l in "${summary[@]}"; do echo "$l"; done
exit $failed
