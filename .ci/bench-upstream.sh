#!/usr/bin/env bash
# Upstream forwarding overhead, part of make bench: the go-sdk
# peer's echo called directly and through an aiod that aggregates it
# (EXTRA_MCP_SERVERS, prefix "g"), and aiod's own echo directly and through
# the same forwarding aiod (prefix "a"), targets alternating round by round.
# Prints median req/s and p99 per target and the through/direct ratios
# (target: throughput >= 0.80, p99 <= 1.5x), and leaves the medians in
# build/bench/upstream-medians.txt (target req/s p99_ms), which bench.sh
# puts in its table.
#
#   GOSDK_URL=http://127.0.0.1:18201/ AIOD_URL=http://127.0.0.1:18291/mcp \
#     PEERS=../shared/peers .ci/bench-upstream.sh
#
# It starts the forwarding aiod itself (bin/aiod, built-ins only) on
# FWD_PORT and stops it on exit; GOSDK_URL and AIOD_URL must be running.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PEERS=${PEERS:-$ROOT/../shared/peers}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-16}
FWD_PORT=${FWD_PORT:-18293}
WORK=$ROOT/build/bench
mkdir -p "$WORK"
: "${GOSDK_URL:?set GOSDK_URL to the go-sdk peer}" "${AIOD_URL:?set AIOD_URL to an aiod serving echo}"
BODY=$PEERS/echo-call.json
LIST='{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
fwd_pid=
trap '[[ -n $fwd_pid ]] && kill "$fwd_pid" 2>/dev/null; wait 2>/dev/null || true' EXIT

EXTRA_MCP_SERVERS="{\"g\":{\"url\":\"$GOSDK_URL\",\"prefix\":\"g\"},\"a\":{\"url\":\"$AIOD_URL\",\"prefix\":\"a\"}}" \
  bin/aiod start --port "$FWD_PORT" --cache-dir "$WORK/cache" --log-level warn 2>"$WORK/aiod-fwd.log" &
fwd_pid=$!
FWD=http://127.0.0.1:$FWD_PORT/mcp
for _ in $(seq 1 12000); do
  curl -sf -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d "$LIST" "$FWD" && break
  sleep 0.01
done
sed 's/"name":"echo"/"name":"g_echo"/' "$BODY" >"$WORK/g-echo.json"
sed 's/"name":"echo"/"name":"a_echo"/' "$BODY" >"$WORK/a-echo.json"
for b in g a; do # both forwarded calls must answer hi before anything is measured
  out=$(curl -s -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d @"$WORK/$b-echo.json" "$FWD")
  [[ $out == *'"text":"hi"'* && $out != *'"isError":true'* ]] || { echo "bench-upstream: ${b}_echo through aiod answered: $out" >&2; exit 1; }
done

# aiod's go-sdk client speaks 2026-07-28 to the peer: the peer's own cost
# in that era is measured too (gosdk-direct-2026), to tell it from aiod's.
cat >"$WORK/echo-2026.json" <<'JSON'
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}
JSON
targets=("gosdk-direct|$BODY|$GOSDK_URL|" "gosdk-direct-2026|$WORK/echo-2026.json|$GOSDK_URL|2026" "gosdk-via-aiod|$WORK/g-echo.json|$FWD|"
  "aiod-direct|$BODY|$AIOD_URL|" "aiod-via-aiod|$WORK/a-echo.json|$FWD|")
res=$WORK/upstream-rounds.txt
: >"$res"
for ((r = 0; r < ROUNDS; r++)); do
  for t in "${targets[@]}"; do
    IFS='|' read -r name body url era <<<"$t"
    hdr=()
    [[ $era == 2026 ]] && hdr=(-H "MCP-Protocol-Version: 2026-07-28" -H "Mcp-Method: tools/call" -H "Mcp-Name: echo")
    "$PEERS/compare.sh" -d "$DURATION" -r 1 -c "$CONNS" "${hdr[@]}" "$body" "$name=$url" | tail -1 >>"$res"
  done
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf '%-16s %12s %12s %10s\n' target req/s p99_ms errors
declare -A rps p99
: >"$WORK/upstream-medians.txt"
for t in "${targets[@]}"; do
  name=${t%%|*}
  rps[$name]=$(awk -v n="$name" '$1==n {print $2}' "$res" | median)
  p99[$name]=$(awk -v n="$name" '$1==n {print $3}' "$res" | median)
  errs=$(awk -v n="$name" '$1==n {s+=$4} END {print s+0}' "$res")
  printf '%-16s %12.0f %12.2f %10d\n' "$name" "${rps[$name]}" "${p99[$name]}" "$errs"
  printf '%s %s %s\n' "$name" "${rps[$name]}" "${p99[$name]}" >>"$WORK/upstream-medians.txt"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }
echo "go-sdk peer through aiod / direct: throughput $(ratio "${rps[gosdk-via-aiod]}" "${rps[gosdk-direct]}") (target >= 0.80), p99 $(ratio "${p99[gosdk-via-aiod]}" "${p99[gosdk-direct]}")x (target <= 1.5x)"
echo "go-sdk peer through aiod / direct in 2026-07-28: throughput $(ratio "${rps[gosdk-via-aiod]}" "${rps[gosdk-direct-2026]}")"
echo "aiod through aiod / direct:        throughput $(ratio "${rps[aiod-via-aiod]}" "${rps[aiod-direct]}"), p99 $(ratio "${p99[aiod-via-aiod]}" "${p99[aiod-direct]}")x (both share the 2 cores)"
