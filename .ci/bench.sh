#!/usr/bin/env bash
# make bench: aiod measured against the peers in ../shared/peers, in one run,
# as ratios. Prints each measurement as it goes (Go micro-benchmarks, HTTP
# throughput in three protocol modes and on both engines, start-up with a
# cold and a warm compile cache, RSS, the built-ins against native
# baselines, page tools, upstream forwarding, hot reload under load), then
# the "Current figures" table built from this run's own figures, which it
# also writes into BENCHMARKS.md between the bench:begin and bench:end
# markers (BENCHMARKS.md says how each row is taken).
#
#   PEERS=../shared/peers DURATION=5 ROUNDS=3 .ci/bench.sh
#
#   BENCH_WRITE=0          print the table, leave BENCHMARKS.md alone
#   BENCH_FILE=PATH        write the table into PATH instead of BENCHMARKS.md
#   BENCH_FAKE=FIGURES     measure nothing: build the table from FIGURES, a
#                          file of "key value" lines (the keys of fig below;
#                          date, commit and machine override the header), to
#                          test the table writer or to record an earlier run
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH_FILE=${BENCH_FILE:-$ROOT/BENCHMARKS.md}
BENCH_WRITE=${BENCH_WRITE:-1}
BENCH_FAKE=${BENCH_FAKE:-}

# fig holds this run's figures, one key each; the table is built from it
# alone. Times in ms unless the key says otherwise, throughput in req/s.
declare -A fig=()

# The table writer --------------------------------------------------------

have() { for k; do [[ -n ${fig[$k]:-} ]] || return 1; done; }
calc() { awk "BEGIN {printf $1}"; } # calc 'FORMAT, EXPR...'
# thousands: 18308 -> 18,308 (integers; anything else as it is)
thousands() { awk -v n="$1" 'BEGIN {if (n !~ /^[0-9]+$/) {print n; exit} s=""; while (length(n) > 3) {s="," substr(n, length(n)-2) s; n=substr(n, 1, length(n)-3)} print n s}'; }
# meets VALUE OP LIMIT: yes or no (op le or ge); "–" without a value
meets() {
  [[ -n $1 ]] || { echo "–"; return; }
  awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN {print ((op == "le" ? v + 0 <= l + 0 : v + 0 >= l + 0) ? "yes" : "**no**")}'
}
# ratio A B [KEY]: fig[KEY] if there is one (a ratio the run printed
# from unrounded figures, or one recorded without its figures), else A/B
# to two decimals, else empty
ratio() {
  if [[ -n ${3:-} ]] && have "$3"; then echo "${fig[$3]}"
  elif have "$1" "$2"; then calc "\"%.2f\", ${fig[$1]} / ${fig[$2]}"; fi
}
rps() { if have "$1"; then echo "$(thousands "$(calc "\"%.0f\", ${fig[$1]}")") req/s"; else echo "–"; fi; }
# peer LABEL TEXT: the peer column, "LABEL TEXT" or "LABEL: –"
peer() { if [[ $2 == – ]]; then echo "$1: –"; else echo "$1 $2"; fi; }
pct() { if [[ -n $1 ]]; then echo "$1%"; else echo "–"; fi; }
ms() { if have "$1"; then echo "${fig[$1]} ms"; else echo "–"; fi; }
x() { if [[ -n $1 ]]; then echo "${1}x${2:+ $2}"; else echo "–"; fi; }
row() { printf '| %s | %s | %s | %s | %s | %s |\n' "$@"; }

header_line() {
  local date commit machine
  date=${fig[date]:-$(date -u '+%Y-%m-%d %H:%M UTC')}
  if [[ -n ${fig[commit]:-} ]]; then commit=${fig[commit]}
  else
    commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
    git diff --quiet HEAD -- 2>/dev/null || commit+=-dirty
  fi
  if [[ -n ${fig[machine]:-} ]]; then machine=${fig[machine]}
  else
    machine="$(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) memory, Linux $(uname -r), $(go env GOVERSION 2>/dev/null || echo 'no Go'), load average ${fig[machine_load]:-$(cut -d' ' -f1-3 /proc/loadavg)} at the start"
  fi
  # shellcheck disable=SC2016 # the backquotes are Markdown
  printf '`make bench` of %s at `%s`; machine: %s.\n' "$date" "$commit" "$machine"
}

bench_table() {
  local r
  header_line
  echo
  row measurement aiod peer ratio target met
  row --- --- --- --- --- ---
  row "start to first tools/list, cold cache (median of three starts)" "$(ms list_cold)" – – "≤ 100 ms" "$(meets "${fig[list_cold]:-}" le 100)"
  row "start to first tools/list, warm cache (median of five starts)" "$(ms list_warm)" – – "≤ 100 ms" "$(meets "${fig[list_warm]:-}" le 100)"
  row "start to first echo answered, warm cache (median of five starts)" "$(ms echo_warm)" – – "≤ 100 ms" "$(meets "${fig[echo_warm]:-}" le 100)"
  if have ready_warm ready_cold; then
    row "start to all compiled, warm / cold cache" "$(calc '"%.1f s / %.1f s", '"${fig[ready_warm]} / 1000, ${fig[ready_cold]} / 1000")" – – – –
  else row "start to all compiled, warm / cold cache" – – – – –; fi
  row "RSS idle after start" "$(if have rss_idle_mib; then echo "${fig[rss_idle_mib]} MiB"; else echo –; fi)" – – "≤ 100 MiB" "$(meets "${fig[rss_idle_mib]:-}" le 100)"
  row "RSS with a warm pool (after the echo load)" "$(if have rss_warm_mib; then echo "${fig[rss_warm_mib]} MiB"; else echo –; fi)" – – – –
  r=$(if have echo_aiod_pct; then echo "${fig[echo_aiod_pct]}"; elif have echo_aiod echo_ceiling; then calc '"%.0f", 100 * '"${fig[echo_aiod]} / ${fig[echo_ceiling]}"; fi)
  row "HTTP echo, legacy without a session, c=16" "$(rps echo_aiod)" "$(peer "Fiber ceiling" "$(rps echo_ceiling)")" "$(pct "$r")" "≥ 70%" "$(meets "$r" ge 70)"
  r=$(ratio echo_aiod echo_extism echo_extism_ratio)
  row "same, against Extism" "$(rps echo_aiod)" "$(peer "extism-echo" "$(rps echo_extism)")" "$(x "$r")" "≥ 3x" "$(meets "$r" ge 3)"
  r=$(ratio echo_aiod echo_gosdk echo_gosdk_ratio)
  row "same, against the go-sdk" "$(rps echo_aiod)" "$(peer "gosdk-echo" "$(rps echo_gosdk)")" "$(x "$r")" "≥ 8x" "$(meets "$r" ge 8)"
  r=$(if have echo_c_pct; then echo "${fig[echo_c_pct]}"; elif have echo_c echo_ceiling; then calc '"%.0f", 100 * '"${fig[echo_c]} / ${fig[echo_ceiling]}"; fi)
  row "HTTP echo, the C echo (\`echo-c\`: the host's share alone), c=16" "$(rps echo_c)" "$(peer "Fiber ceiling" "$(rps echo_ceiling)")" "$(pct "$r")" "≥ 80%" "$(meets "$r" ge 80)"
  r=$(if have echo_aiod_cpu_pct echo_c_cpu_pct; then echo "Go ${fig[echo_aiod_cpu_pct]}%, C ${fig[echo_c_cpu_pct]}%"; elif have echo_aiod_cpu_us echo_c_cpu_us echo_ceiling_cpu_us; then calc '"Go %.0f%%, C %.0f%%", '"100 * ${fig[echo_ceiling_cpu_us]} / ${fig[echo_aiod_cpu_us]}, 100 * ${fig[echo_ceiling_cpu_us]} / ${fig[echo_c_cpu_us]}"; fi)
  row "same runs, by the server's own CPU per request (the generator's share and the machine's other load left out), Go and C echo" "$(if have echo_aiod_cpu_us echo_c_cpu_us; then echo "Go ${fig[echo_aiod_cpu_us]} µs, C ${fig[echo_c_cpu_us]} µs"; else echo –; fi)" "$(if have echo_ceiling_cpu_us; then echo "Fiber ceiling ${fig[echo_ceiling_cpu_us]} µs"; else echo –; fi)" "${r:-–}" – –
  r=$(ratio echo_extism_cpu_us echo_aiod_cpu_us)
  row "same, the Go echo's CPU per request against Extism's" "$(if have echo_aiod_cpu_us; then echo "${fig[echo_aiod_cpu_us]} µs"; else echo –; fi)" "$(if have echo_extism_cpu_us; then echo "extism-echo ${fig[echo_extism_cpu_us]} µs"; else echo –; fi)" "$(x "$r")" – –
  row "the host's own CPU per echo call over HTTP, C echo (profile: every layer between HTTP and the guest)" "$(if have host_share_us; then echo "${fig[host_share_us]} µs of ${fig[layers_total_us]:-?} µs"; else echo –; fi)" – – "≤ 10 µs" "$(meets "${fig[host_share_us]:-}" le 10)"
  r=$(ratio lat64_aiod_p99 lat64_aiod_p50)
  row "HTTP echo at c=64, p99 against p50" "$(if have lat64_aiod_p99 lat64_aiod_p50; then echo "p99 ${fig[lat64_aiod_p99]} ms, p50 ${fig[lat64_aiod_p50]} ms"; else echo –; fi)" "$(if have lat64_ceiling_p99 lat64_ceiling_p50; then echo "Fiber ceiling $(ratio lat64_ceiling_p99 lat64_ceiling_p50)x"; else echo –; fi)" "$(x "$r")" "≤ 4x" "$(meets "$r" le 4)"
  r=$(ratio modern_aiod modern_gosdk modern_ratio)
  row "HTTP echo, 2026-07-28 headers and \`_meta\`" "$(rps modern_aiod)" "$(peer "gosdk-echo" "$(rps modern_gosdk)")" "$(x "$r")" – –
  r=$(ratio session_aiod session_gosdk session_ratio)
  row "HTTP echo, legacy in a session" "$(rps session_aiod)" "$(peer "gosdk-echo, sessions" "$(rps session_gosdk)")" "$(x "$r")" – –
  r=$(ratio wt_wasmtime wt_wazero)
  row "HTTP echo on wasmtime, against wazero" "$(rps wt_wasmtime)" "$(peer "wazero" "$(rps wt_wazero)")" "$(x "$r")" – –
  r=$(ratio read_aiod read_native)
  row "\`sandbox_file_operations\` read of 1 MiB, c=4" "$(rps read_aiod)" "$(peer "native-read" "$(rps read_native)")" "$(x "$r")" "≥ 0.67x" "$(meets "$r" ge 0.67)"
  r=$(ratio bash_aiod_us bash_native_us)
  row "\`sandbox_execute_bash\` \`echo hi\`, per call" "$(if have bash_aiod_us; then echo "$(thousands "${fig[bash_aiod_us]}") µs"; else echo –; fi)" "\`bash -c\` $(if have bash_native_us; then echo "$(thousands "${fig[bash_native_us]}") µs"; else echo –; fi)" "$(x "$r")" "≤ 1.5x" "$(meets "$r" le 1.5)"
  r=$(ratio mm10_aiod_us mm10_native_us mm10_ratio)
  row "Machine Mode call, 10 events, against running the CLI" "$(if have mm10_aiod_us; then echo "$(thousands "${fig[mm10_aiod_us]}") µs"; else echo –; fi)" "direct $(if have mm10_native_us; then echo "$(thousands "${fig[mm10_native_us]}") µs"; else echo –; fi)" "$(x "$r")" "≤ 1.5x" "$(meets "$r" le 1.5)"
  r=$(ratio mm10k_aiod_us mm10k_native_us mm10k_ratio)
  row "Machine Mode call, 10,000 events, against running the CLI" "$(if have mm10k_aiod_us; then echo "$(thousands "${fig[mm10k_aiod_us]}") µs"; else echo –; fi)" "direct $(if have mm10k_native_us; then echo "$(thousands "${fig[mm10k_native_us]}") µs"; else echo –; fi)" "$(x "$r")" "≤ 1.2x" "$(meets "$r" le 1.2)"
  row "in-process \`BenchmarkCallEcho\`, median of five runs" "$(if have callecho_us; then echo "${fig[callecho_us]} µs, ${fig[callecho_allocs]:-?} allocs"; else echo –; fi)" – – "≤ 4 µs, ≤ 3 allocs" "$(if have callecho_us callecho_allocs; then a=$(meets "${fig[callecho_us]}" le 4) b=$(meets "${fig[callecho_allocs]}" le 3); if [[ $a == yes ]]; then echo "$b"; else echo "$a"; fi; else echo –; fi)"
  row "three no-op C guard plugins around echo (each asked before and after), added per call, median (\`TestChainOverhead\`, wazero)" "$(if have chain_added_us; then echo "${fig[chain_added_us]} µs"; else echo –; fi)" "$(if have chain_none_us; then echo "echo through the chain, no hooks ${fig[chain_none_us]} µs"; else echo –; fi)" – "≤ 5 µs" "$(meets "${fig[chain_added_us]:-}" le 5)"
  row "same, echo's p99 over HTTP (go-sdk client, \`TestGuardChainEcho\`), with the chain against without" "$(x "${fig[chain_p99_x]:-}")" "$(if have chain_http_median_added_us; then echo "median +${fig[chain_http_median_added_us]} µs"; else echo –; fi)" "$(x "${fig[chain_p99_x]:-}")" "≤ 1.2x" "$(meets "${fig[chain_p99_x]:-}" le 1.2)"
  r=$(ratio snap_wz_scratch snap_wz)
  row "warm-pool instance of the Go echo from its owner's snapshot, wazero" "$(ms snap_wz)" "$(peer "from scratch" "$(ms snap_wz_scratch)")" "$(x "$r" faster)" "≤ 0.2 ms" "$(meets "${fig[snap_wz]:-}" le 0.2)"
  r=$(ratio snap_wt_scratch snap_wt)
  row "same, wasmtime" "$(ms snap_wt)" "$(peer "from scratch" "$(ms snap_wt_scratch)")" "$(x "$r" faster)" "≤ 0.2 ms" "$(meets "${fig[snap_wt]:-}" le 0.2)"
  row "memory per tenant with one warm echo instance (PSS, wazero)" "$(if have tenant_kib; then echo "${fig[tenant_kib]} KiB"; else echo –; fi)" "$(if have tenant_kib_scratch; then echo "from scratch ${fig[tenant_kib_scratch]} KiB"; else echo –; fi)" – "≤ 256 KiB" "$(meets "${fig[tenant_kib]:-}" le 256)"
  row "tenants with one warm echo instance per GiB (wazero)" "$(if have tenants_gib; then thousands "${fig[tenants_gib]}"; else echo –; fi)" "$(if have tenants_gib_scratch; then echo "from scratch $(thousands "${fig[tenants_gib_scratch]}")"; else echo –; fi)" – "≥ 4,000" "$(meets "${fig[tenants_gib]:-}" ge 4000)"
  row "a new tenant's first instance and echo, in-process (wazero, spare snapshot ready)" "$(ms new_tenant)" – – "≤ 1 ms" "$(meets "${fig[new_tenant]:-}" le 1)"
  row "first call of a tenant never seen before, over HTTP, 600 new tenants one after another (wazero, $(if have newhttp_spares; then echo "${fig[newhttp_spares]} spares"; else echo spares; fi)), median / p90" "$(if have newhttp_p50; then echo "${fig[newhttp_p50]} / ${fig[newhttp_p90]} ms"; else echo –; fi)" "$(if have newhttp_scratch_p50; then echo "snapshots off ${fig[newhttp_scratch_p50]} / ${fig[newhttp_scratch_p90]} ms"; else echo –; fi)" – "≤ 1 ms" "$(meets "${fig[newhttp_p50]:-}" le 1)"
  row "same, 100 new tenants paced one every 20 ms (50 a second), median / p90" "$(if have newhttp_paced_p50; then echo "${fig[newhttp_paced_p50]} / ${fig[newhttp_paced_p90]} ms"; else echo –; fi)" "$(if have newhttp_known; then echo "a known tenant's echo ${fig[newhttp_known]} ms back to back, ${fig[newhttp_known_paced]:-–} ms paced alike"; else echo –; fi)" – "≤ 1 ms" "$(meets "${fig[newhttp_paced_p50]:-}" le 1)"
  row "an instance from scratch of a Go module with nothing but the runtime (\`GoRuntimeFloor\`: the least a new tenant without a spare waits for a Go plugin), in-process (wazero)" "$(if have go_floor; then echo "${fig[go_floor]} ms"; else echo –; fi)" "$(if have go_floor_echo; then echo "the Go echo ${fig[go_floor_echo]} ms"; else echo –; fi)" – – –
  r=$(ratio prewarm_scratch_ms prewarm_ms)
  row "a hot swap's prewarm of two instances, in-process (wazero; its wall time, which bounds its CPU)" "$(ms prewarm_ms)" "$(peer "snapshots off" "$(ms prewarm_scratch_ms)")" "$(x "$r" faster)" "≤ 1 ms" "$(meets "${fig[prewarm_ms]:-}" le 1)"
  r=$(ratio fwd_via fwd_direct)
  row "upstream forwarding: the go-sdk peer's echo through aiod" "$(rps fwd_via)" "$(peer "the peer directly" "$(rps fwd_direct)")" "$(x "$r")" "≥ 0.80x" "$(meets "$r" ge 0.80)"
  r=$(ratio fwd_via_p99 fwd_direct_p99)
  row "same, p99 latency" "$(ms fwd_via_p99)" "$(peer "the peer directly" "$(ms fwd_direct_p99)")" "$(x "$r")" "≤ 1.5x" "$(meets "$r" le 1.5)"
  r=$(ratio page_upstream page_aiod)
  row "\`browser_get_text\` (page tools), median" "$(ms page_aiod)" "$(peer mcp-server-browser "$(ms page_upstream)")" "$(x "$r" faster)" "≥ 2x faster" "$(meets "$r" ge 2)"
  r=$(ratio swap_p99 base_p99 swap_ratio)
  row "hot reload under load: p99 during swaps" "$(ms swap_p99)" "$(peer "without swaps" "$(ms base_p99)")" "$(x "$r")" "≤ 2x" "$(meets "$r" le 2)"
  row "same, failed calls" "$(if have swap_failed; then echo "${fig[swap_failed]} of $(thousands "${fig[swap_calls]:-?}")"; else echo –; fi)" – – 0 "$(if have swap_failed; then meets "${fig[swap_failed]}" le 0; else echo –; fi)"
  row "same, rename to serving (median; max after the first)" "$(if have swap_serving; then echo "${fig[swap_serving]} ms; ${fig[swap_serving_max]:-?} ms"; else echo –; fi)" – – "≤ 250 ms" "$(meets "${fig[swap_serving_max]:-}" le 250)"
  if have soak_fd0 soak_fd1 soak_rss0 soak_rss1; then
    r=$(awk -v a="${fig[soak_fd0]}" -v b="${fig[soak_fd1]}" -v c="${fig[soak_rss0]}" -v d="${fig[soak_rss1]}" 'BEGIN {print (b <= a + a / 10 && d <= c + c / 10) ? "yes" : "**no**"}')
    row "200 swaps (\`TestReloadSwapSoak\`): open fds, RSS" "fds ${fig[soak_fd0]} → ${fig[soak_fd1]}, RSS $(thousands "${fig[soak_rss0]}") → $(thousands "${fig[soak_rss1]}") KiB" – – "within 10%" "$r"
  else row "200 swaps (\`TestReloadSwapSoak\`): open fds, RSS" – – – "within 10%" –; fi
}

# write_block FILE: replaces what is between the markers in FILE with the
# table (stdin); FILE must hold both markers, in order.
write_block() {
  local file=$1 table
  table=$(cat)
  if ! grep -q '^<!-- bench:begin -->$' "$file" || ! grep -q '^<!-- bench:end -->$' "$file"; then
    echo "bench: $file has no <!-- bench:begin --> / <!-- bench:end --> markers" >&2
    return 1
  fi
  TABLE=$table awk '
    $0 == "<!-- bench:begin -->" {print; print ENVIRON["TABLE"]; skip = 1; next}
    $0 == "<!-- bench:end -->" {skip = 0}
    !skip' "$file" >"$file.tmp" && mv "$file.tmp" "$file"
}

finish() {
  local table
  table=$(bench_table)
  section "Current figures"
  printf '%s\n' "$table"
  if [[ $BENCH_WRITE != 0 ]]; then
    printf '%s\n' "$table" | write_block "$BENCH_FILE"
    echo
    echo "(written into $(basename "$BENCH_FILE"))"
  fi
}

section() { printf '\n## %s\n\n' "$*"; }

if [[ -n $BENCH_FAKE ]]; then
  while read -r k v; do
    [[ -z $k || $k == \#* ]] && continue
    fig[$k]=$v
  done <"$BENCH_FAKE"
  finish
  exit 0
fi

# The measurements -------------------------------------------------------
PEERS=${PEERS:-$ROOT/../shared/peers}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-16}
AIOD_PORT=${AIOD_PORT:-18291}
GOSDK_PORT=18201
GOSDK_SESSION_PORT=18203
CEIL_PORT=18202
WORK=$ROOT/build/bench
mkdir -p "$WORK"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

command -v wrk >/dev/null || { echo "bench: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
[[ -d $PEERS ]] || { echo "bench: peers not found at $PEERS (set PEERS=)" >&2; exit 2; }
if [[ $BENCH_WRITE != 0 ]]; then # fail now, not after the whole run
  grep -q '^<!-- bench:begin -->$' "$BENCH_FILE" || { echo "bench: no <!-- bench:begin --> marker in $BENCH_FILE" >&2; exit 2; }
fi
fig[machine_load]=$(cut -d' ' -f1-3 /proc/loadavg)

wait_http() { # url body
  for _ in $(seq 1 12000); do
    if curl -sf -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d "$2" "$1"; then return 0; fi
    sleep 0.01
  done
  echo "bench: $1 did not come up" >&2; return 1
}
# col FILE NAME N: column N of compare.sh's line for target NAME
col() { awk -v n="$2" -v c="$3" '$1 == n {print $c}' "$1"; }
# bench_val FILE NAME UNIT: the value before UNIT on Go benchmark NAME's line
bench_val() { awk -v n="$2" -v u="$3" '$1 ~ "^" n "(-[0-9]+)?$" {for (i = 2; i < NF; i++) if ($(i + 1) == u) print $i}' "$1" | tail -1; }
# to_ms: a Go duration (850µs, 9.9ms, 1.2s) in ms
to_ms() { awk -v d="$1" 'BEGIN {
  if (d ~ /µs$|us$/) v = d / 1000; else if (d ~ /ms$/) v = d + 0; else if (d ~ /ns$/) v = d / 1e6
  else if (d ~ /m[0-9.]+s$/) {split(d, p, "m"); v = (p[1] * 60 + p[2]) * 1000} else v = d * 1000
  printf (v >= 100 ? "%.0f" : "%.3g"), v}'; }

section "Peers (built from $PEERS)"
rm -rf "$WORK/peers" && cp -r "$PEERS" "$WORK/peers" && chmod -R u+w "$WORK/peers"
(cd "$WORK/peers/gosdk-echo" && go build -o gosdk-echo .)
(cd "$WORK/peers/fiber-ceiling" && go build -o fiber-ceiling .)
(cd "$WORK/peers/native-read" && go build -o native-read .)
"$WORK/peers/extism-echo/build.sh" >/dev/null
EXTISM_PORT=18204 NATIVE_READ_PORT=18205
"$WORK/peers/extism-echo/extism-echo" -addr 127.0.0.1:$EXTISM_PORT -wasm "$WORK/peers/extism-echo/echo.wasm" >/dev/null 2>&1 & EXTISM_PID=$!; pids+=($!)
"$WORK/peers/native-read/native-read" -addr 127.0.0.1:$NATIVE_READ_PORT >/dev/null 2>&1 & pids+=($!)
"$WORK/peers/gosdk-echo/gosdk-echo" -addr 127.0.0.1:$GOSDK_PORT >/dev/null 2>&1 & GOSDK_PID=$!; pids+=($!)
"$WORK/peers/gosdk-echo/gosdk-echo" -addr 127.0.0.1:$GOSDK_SESSION_PORT -stateless=false >/dev/null 2>&1 & pids+=($!)
"$WORK/peers/fiber-ceiling/fiber-ceiling" -addr 127.0.0.1:$CEIL_PORT >/dev/null 2>&1 & CEIL_PID=$!; pids+=($!)
echo "gosdk-echo (stateless :$GOSDK_PORT, sessions :$GOSDK_SESSION_PORT), fiber-ceiling :$CEIL_PORT, extism-echo :$EXTISM_PORT, native-read :$NATIVE_READ_PORT"
sleep 2 # the peers' own start-up (five processes) is over before aiod's is timed

LIST='{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
ECHO='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}'
start_aiod() { # cache-dir; sets AIOD_PID, STARTUP_MS (ms to the first tools/list answered),
  # ECHO_MS (to the first echo call answered) and READY_MS (until nothing is loading)
  local t0 t1
  t0=$(date +%s%N)
  bin/aiod start --port "$AIOD_PORT" --plugins-dir build/plugins --cache-dir "$1" --log-level warn 2>"$WORK/aiod.log" &
  AIOD_PID=$!
  wait_http "http://127.0.0.1:$AIOD_PORT/mcp" "$LIST"
  t1=$(date +%s%N)
  STARTUP_MS=$(((t1 - t0) / 1000000))
  curl -sf -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d "$ECHO" "http://127.0.0.1:$AIOD_PORT/mcp"
  ECHO_MS=$((($(date +%s%N) - t0) / 1000000))
  until curl -sf "http://127.0.0.1:$AIOD_PORT/v1/capabilities" | grep -q '"loading":\[\]'; do sleep 0.02; done
  READY_MS=$((($(date +%s%N) - t0) / 1000000))
}
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

section "Start-up: process start to first tools/list answered"
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# cold: the median of three starts, each from an empty cache (each compiles
# every plugin, ~13 s); warm: of five starts on the cache the last cold one
# filled. One start moves by tens of ms with the machine's load. The last
# warm start keeps serving for the rest of the bench.
cold_list=() cold_echo=() cold_ready=()
for i in 1 2 3; do
  rm -rf "$WORK/cache"
  start_aiod "$WORK/cache"
  cold_list+=("$STARTUP_MS") cold_echo+=("$ECHO_MS") cold_ready+=("$READY_MS")
  kill "$AIOD_PID"; wait "$AIOD_PID" 2>/dev/null || true
done
fig[list_cold]=$(median "${cold_list[@]}") fig[echo_cold]=$(median "${cold_echo[@]}") fig[ready_cold]=$(median "${cold_ready[@]}")
echo "cold starts: tools/list ${cold_list[*]} ms; first echo ${cold_echo[*]} ms; all compiled ${cold_ready[*]} ms"
warm_list=() warm_echo=() warm_ready=()
for i in 1 2 3 4 5; do
  ((i == 1)) || { kill "$AIOD_PID"; wait "$AIOD_PID" 2>/dev/null || true; }
  start_aiod "$WORK/cache"
  warm_list+=("$STARTUP_MS") warm_echo+=("$ECHO_MS") warm_ready+=("$READY_MS")
done
fig[list_warm]=$(median "${warm_list[@]}") fig[echo_warm]=$(median "${warm_echo[@]}") fig[ready_warm]=$(median "${warm_ready[@]}")
echo "warm starts: tools/list ${warm_list[*]} ms; first echo ${warm_echo[*]} ms; all compiled ${warm_ready[*]} ms"
pids+=("$AIOD_PID")
printf '%-28s %8s %14s %14s\n' "" "tools/list" "first echo" "all compiled"
printf '%-28s %8s %14s %14s\n' "cold compile cache" "${fig[list_cold]} ms" "${fig[echo_cold]} ms" "${fig[ready_cold]} ms"
printf '%-28s %8s %14s %14s\n' "warm compile cache" "${fig[list_warm]} ms" "${fig[echo_warm]} ms" "${fig[ready_warm]} ms"
sleep 1 # idle: the modules nothing called go dormant once loading ends (RATIONALE, "Footprint")
fig[rss_idle_mib]=$(($(rss_kb $AIOD_PID) / 1024))

section "Go micro-benchmarks (in-process call path)"
# The call path's benchmarks only: the registry's reload benchmarks measure
# in milliseconds and have rows of their own below.
# five runs of the registry's: its row is their median (one run moves 2x
# with the machine's load)
{ go test -run '^$' -bench 'CallEcho|ExtismEcho' -benchmem -benchtime 20000x -count 5 ./host/plugin
  go test -run '^$' -bench . -benchmem -benchtime 20000x ./host/mcp; } 2>/dev/null | grep -E '^Benchmark' | tee "$WORK/go-bench.txt" || true
ns=$(awk '$1 ~ /^BenchmarkCallEcho(-[0-9]+)?$/ {for (i = 2; i < NF; i++) if ($(i + 1) == "ns/op") print $i}' "$WORK/go-bench.txt" | sort -g | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]}')
[[ -n $ns ]] && fig[callecho_us]=$(calc '"%.1f", '"$ns / 1000") fig[callecho_allocs]=$(bench_val "$WORK/go-bench.txt" BenchmarkCallEcho allocs/op)

section "Hook chain (in-process: echo alone, and behind three no-op guard plugins; spec/hooks.md)"
go test -count=1 -run '^TestChainOverhead$' -v ./host/hooks 2>/dev/null | grep -E 'median' | tee "$WORK/hooks-chain.txt" || true
# "none   median  3.1µs p99 ..." and "c=3    median  8.0µs (+4.9µs) p99 ..."
n0=$(awk '$2 == "none" {print $4}' "$WORK/hooks-chain.txt" | tail -1)
a3=$(awk '$2 == "c=3" {gsub(/[(+)]/, "", $5); print $5}' "$WORK/hooks-chain.txt" | tail -1)
[[ -n $n0 ]] && fig[chain_none_us]=$(calc '"%.1f", '"$(to_ms "$n0") * 1000")
[[ -n $a3 ]] && fig[chain_added_us]=$(calc '"%.1f", '"$(to_ms "$a3") * 1000")
go test -count=1 -run '^TestGuardChainEcho$' -v ./host 2>/dev/null | grep -E 'median' | tee "$WORK/hooks-http.txt" || true
# "chain-echo: median +17.8µs (1.11x), p99 1.02x"
line=$(grep 'chain-echo:' "$WORK/hooks-http.txt" | tail -1)
if [[ -n $line ]]; then
  fig[chain_p99_x]=$(awk '{print $NF}' <<<"$line" | tr -d x)
  fig[chain_http_median_added_us]=$(calc '"%.1f", '"$(to_ms "$(awk '{gsub(/\+/, "", $4); print $4}' <<<"$line")") * 1000")
fi

section "Instances from snapshots (in-process, the Go echo; RATIONALE, \"Instances from snapshots\")"
go test -run '^$' -bench 'Instantiate$|SnapshotTenants|SnapshotNewTenant|GoRuntimeFloor' -benchtime 200x ./host/runtime/wazero 2>/dev/null | grep -E '^Benchmark' | tee "$WORK/snap-wazero.txt" || true
go test -run '^$' -bench 'BenchmarkSnapshot$' -benchtime 2000x ./host/runtime/wasmtime 2>/dev/null | grep -E '^Benchmark' | tee "$WORK/snap-wasmtime.txt" || true
for b in 'Instantiate/snapshot:snap_wz' 'Instantiate/mapping\\+merge\\+dropzero\\+image:snap_wz_scratch' 'SnapshotNewTenant:new_tenant' 'GoRuntimeFloor/runtime-only:go_floor' 'GoRuntimeFloor/echo:go_floor_echo'; do
  ns=$(bench_val "$WORK/snap-wazero.txt" "Benchmark${b%%:*}" ns/op)
  [[ -n $ns ]] && fig[${b#*:}]=$(calc '"%.3g", '"$ns / 1e6")
done
for b in 'Snapshot/snapshot-map:snap_wt' 'Snapshot/scratch:snap_wt_scratch'; do
  ns=$(bench_val "$WORK/snap-wasmtime.txt" "Benchmark${b%%:*}" ns/op)
  [[ -n $ns ]] && fig[${b#*:}]=$(calc '"%.3g", '"$ns / 1e6")
done
go test -run '^$' -bench 'ReloadPrewarm' -benchtime 40x ./host/plugin 2>/dev/null | grep -E '^Benchmark' | tee "$WORK/prewarm.txt" || true
for b in 'prewarm:prewarm_ms' 'prewarm-scratch:prewarm_scratch_ms'; do
  v=$(bench_val "$WORK/prewarm.txt" "BenchmarkReloadPrewarm/${b%%:*}" prewarm-ms)
  [[ -n $v ]] && fig[${b#*:}]=$(calc '"%.3g", '"$v")
done
go test -run '^$' -bench 'NewTenantHTTP' -benchtime 1x ./host 2>/dev/null | grep -E '^Benchmark' | tee "$WORK/newtenant-http.txt" || true
for b in 'burst-[0-9]+spares:newhttp_p50:first-ms/p50' 'burst-[0-9]+spares:newhttp_p90:first-ms/p90' 'scratch:newhttp_scratch_p50:first-ms/p50' 'scratch:newhttp_scratch_p90:first-ms/p90' \
  'paced-20ms:newhttp_paced_p50:first-ms/p50' 'paced-20ms:newhttp_paced_p90:first-ms/p90' 'paced-20ms:newhttp_known:known-ms/p50' 'paced-20ms:newhttp_known_paced:known-paced-ms/p50'; do
  IFS=: read -r sub key unit <<<"$b"
  v=$(bench_val "$WORK/newtenant-http.txt" "BenchmarkNewTenantHTTP/$sub" "$unit")
  [[ -n $v ]] && fig[$key]=$(calc '"%.3g", '"$v")
done
fig[newhttp_spares]=$(grep -oE 'burst-[0-9]+spares' "$WORK/newtenant-http.txt" | head -1 | tr -dc 0-9)
for b in 'snapshots:tenant_kib:PSS-KiB/tenant' 'scratch:tenant_kib_scratch:PSS-KiB/tenant' 'snapshots:tenants_gib:tenants/GiB' 'scratch:tenants_gib_scratch:tenants/GiB'; do
  IFS=: read -r sub key unit <<<"$b"
  v=$(bench_val "$WORK/snap-wazero.txt" "BenchmarkSnapshotTenants/$sub" "$unit")
  [[ -n $v ]] && fig[$key]=$(calc '"%.0f", '"$v")
done

section "Built-in tools against native baselines (per-call latency, over HTTP)"
go test -run '^$' -bench 'FileRead1MiB|ReadFile1MiB|BashEchoHi' -benchtime 30x ./host/sandboxtest 2>/dev/null | grep -E '^Benchmark' | tee "$WORK/sandbox-bench.txt" || true
for b in BashEchoHi:bash_aiod_us NativeBashEchoHi:bash_native_us FileRead1MiB:readcall_aiod_us NativeReadFile1MiB:readcall_native_us; do
  ns=$(bench_val "$WORK/sandbox-bench.txt" "Benchmark${b%%:*}" ns/op)
  [[ -n $ns ]] && fig[${b#*:}]=$(calc '"%.0f", '"$ns / 1000")
done
have bash_aiod_us bash_native_us && echo "bash echo hi: ${fig[bash_aiod_us]} us, bash -c ${fig[bash_native_us]} us, ratio $(ratio bash_aiod_us bash_native_us)"
have readcall_aiod_us readcall_native_us && echo "file read 1 MiB: ${fig[readcall_aiod_us]} us, os.ReadFile ${fig[readcall_native_us]} us, ratio $(ratio readcall_aiod_us readcall_native_us)"

section "Machine Mode tools: a call against running the CLI directly (per call, over HTTP, alternating; medians)"
go test -run '^$' -bench 'MachineMode$' -benchtime 40x ./host/machinetest 2>/dev/null | grep -E '^Benchmark' | tee "$WORK/machine-bench.txt" || true
for b in 10:mm10 10000:mm10k; do
  for u in aiod-us:_aiod_us direct-us:_native_us ratio:_ratio aiod-cpu-us:_aiod_cpu_us direct-cpu-us:_native_cpu_us; do
    v=$(bench_val "$WORK/machine-bench.txt" "BenchmarkMachineMode/events=${b%%:*}" "${u%%:*}")
    [[ -n $v ]] && fig[${b#*:}${u#*:}]=$(if [[ ${u%%:*} == ratio ]]; then calc '"%.2f", '"$v"; else calc '"%.0f", '"$v"; fi)
  done
done
have mm10_ratio && echo "Machine Mode, 10 events: ${fig[mm10_aiod_us]} us against ${fig[mm10_native_us]} us directly, ${fig[mm10_ratio]}x (CPU ${fig[mm10_aiod_cpu_us]:-?} / ${fig[mm10_native_cpu_us]:-?} us)"
have mm10k_ratio && echo "Machine Mode, 10,000 events: ${fig[mm10k_aiod_us]} us against ${fig[mm10k_native_us]} us directly, ${fig[mm10k_ratio]}x (CPU ${fig[mm10k_aiod_cpu_us]:-?} / ${fig[mm10k_native_cpu_us]:-?} us)"

section "Page tools: browser_get_text through aiod vs @agent-infra/mcp-server-browser (same Chromium, medians)"
# Needs Debian's chromium and the pinned Node tools (the benchmark runs host/e2e/testdata/install.sh).
go test -run '^$' -bench 'PageGetText' -benchtime 200x -count 3 ./host/sandboxtest 2>/dev/null | grep -E '^Benchmark' | tee "$WORK/page-bench.txt" || true
# the median of the -count runs, by aiod's time
if [[ -s $WORK/page-bench.txt ]]; then
  if read -r a u < <(awk '{a = ""; for (i = 2; i < NF; i++) {if ($(i + 1) == "aiod-ms") a = $i; if ($(i + 1) == "upstream-ms") u = $i} if (a != "") print a, u}' "$WORK/page-bench.txt" | sort -n | awk '{l[NR] = $0} END {if (NR) print l[int((NR + 1) / 2)]}'); then
    fig[page_aiod]=$a fig[page_upstream]=$u
  fi
fi

URL="http://127.0.0.1:$AIOD_PORT/mcp"
BODY=$PEERS/echo-call.json
section "HTTP echo throughput, legacy without a session (ratios to the go-sdk peer)"
# aiod-c: the C echo (plugins/examples/echo-c, the Go echo's answers with a
# few hundred nanoseconds of guest work) served by a second aiod from a
# plugins directory of its own (its tool is also named echo): the host's
# share of a call without the standard-Go guest's.
C_PORT=$((AIOD_PORT + 3)) C_URL=http://127.0.0.1:$((AIOD_PORT + 3))/mcp
rm -rf "$WORK/plugins-c"
bin/aiod plugin build plugins/examples/echo-c --into "$WORK/plugins-c" --work "$WORK/work-echo-c" --cache-dir "$WORK/cache" >/dev/null
C_PPROF=127.0.0.1:$((AIOD_PORT + 4))
bin/aiod start --port "$C_PORT" --plugins-dir "$WORK/plugins-c" --cache-dir "$WORK/cache" --log-level warn --pprof-addr "$C_PPROF" 2>"$WORK/aiod-c.log" &
C_PID=$!; pids+=("$C_PID")
wait_http "$C_URL" "$ECHO"
# measured once its start-up loader is done, as aiod's own start is
until curl -sf "http://127.0.0.1:$C_PORT/v1/capabilities" | grep -q '"loading":\[\]'; do sleep 0.02; done
# compare.sh's load (wrk -t1, targets in turn, medians), with each server's
# CPU per request and wrk's beside it (.ci/bench-http.sh)
rm -f "$WORK/echo-rounds.txt"
.ci/bench-http.sh -d "$DURATION" -r "$ROUNDS" -c "$CONNS" -b ceiling -k "$WORK/echo-rounds.txt" "$BODY" \
  gosdk=$GOSDK_PID=http://127.0.0.1:$GOSDK_PORT/ aiod=$AIOD_PID="$URL" ceiling=$CEIL_PID=http://127.0.0.1:$CEIL_PORT/mcp \
  extism=$EXTISM_PID=http://127.0.0.1:$EXTISM_PORT/mcp aiod-c=$C_PID="$C_URL" | tee "$WORK/echo.txt"
for t in gosdk:gosdk aiod:aiod ceiling:ceiling extism:extism aiod-c:c; do
  fig[echo_${t#*:}]=$(col "$WORK/echo.txt" "${t%%:*}" 2) fig[echo_${t#*:}_cpu_us]=$(col "$WORK/echo.txt" "${t%%:*}" 6)
done
# aiod against Extism: the median of the rounds' own ratios too
fig[echo_extism_ratio]=$(awk '$2 == "aiod" {a[$1] = $3} $2 == "extism" {e[$1] = $3} END {for (r in a) if (e[r] > 0) print a[r] / e[r]}' "$WORK/echo-rounds.txt" 2>/dev/null |
  sort -g | awk '{v[NR] = $1} END {if (NR) printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}')
# against the ceiling: the medians of the rounds' own ratios, in percent
for t in aiod:aiod aiod-c:c; do
  v=$(col "$WORK/echo.txt" "${t%%:*}" 8) && [[ -n $v ]] && fig[echo_${t#*:}_pct]=$(calc '"%.0f", 100 * '"$v")
  v=$(col "$WORK/echo.txt" "${t%%:*}" 9) && [[ -n $v ]] && fig[echo_${t#*:}_cpu_pct]=$(calc '"%.0f", 100 * '"$v")
done
fig[rss_warm_mib]=$(($(rss_kb $AIOD_PID) / 1024))

section "HTTP echo latency at c=64: p99 against p50 (medians of $ROUNDS rounds, alternating)"
# the request as a wrk script, for the profile's load below
cat >"$WORK/lat.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.body = [==[$(cat "$BODY")]==]
done = function(summary, latency, requests)
  io.write(string.format("RESULT %.3f %.3f %d\\n", latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status + summary.errors.timeout))
end
LUA
.ci/bench-http.sh -d "$DURATION" -r "$ROUNDS" -c 64 "$BODY" \
  aiod=$AIOD_PID="$URL" aiod-c=$C_PID="$C_URL" ceiling=$CEIL_PID=http://127.0.0.1:$CEIL_PORT/mcp | tee "$WORK/lat64.txt"
for t in aiod aiod-c ceiling; do
  p50=$(col "$WORK/lat64.txt" "$t" 3) p99=$(col "$WORK/lat64.txt" "$t" 4)
  [[ -n $p50 && -n $p99 ]] && echo "$t p99/p50 $(calc '"%.2f", '"$p99 / $p50")"
  fig[lat64_${t//-/_}_p50]=$p50 fig[lat64_${t//-/_}_p99]=$p99
done

section "Where a request's CPU goes: the C echo's aiod, per layer, µs of CPU a request (a profile over $((DURATION * 2)) s of wrk c=$CONNS)"
curl -s -o "$WORK/layers-c.pprof" "http://$C_PPROF/debug/pprof/profile?seconds=$((DURATION * 2))" &
prof=$!
sleep 0.2
n=$(wrk -t1 -c"$CONNS" -d"$((DURATION * 2))s" -s "$WORK/lat.lua" "$C_URL" | awk '/ requests in / {print $1}')
wait "$prof" || true
if .ci/bench-layers.sh bin/aiod "$WORK/layers-c.pprof" "${n:-0}" | tee "$WORK/layers-c.txt"; then
  fig[host_share_us]=$(awk '/^host share/ {print $NF}' "$WORK/layers-c.txt")
  fig[layers_total_us]=$(awk '/^total/ {print $NF}' "$WORK/layers-c.txt")
fi
kill "$C_PID" 2>/dev/null || true

section "sandbox_file_operations read of 1 MiB, c=4 (ratio to the native-read peer: same tool, byte-identical answer)"
# read-call.json reads /tmp/aiod-bench-1mib.txt: a 1 MiB text file
head -c 786432 /dev/urandom | base64 -w 76 >/tmp/aiod-bench-1mib.txt
truncate -s 1048576 /tmp/aiod-bench-1mib.txt
"$PEERS/compare.sh" -d "$DURATION" -r "$ROUNDS" -c 4 "$PEERS/read-call.json" \
  native=http://127.0.0.1:$NATIVE_READ_PORT/mcp aiod="$URL" | tee "$WORK/read.txt"
fig[read_native]=$(col "$WORK/read.txt" native 2) fig[read_aiod]=$(col "$WORK/read.txt" aiod 2)

if [[ ${BENCH_WASMTIME:-1} == 1 ]] && { bin/aiod start --engine list 2>&1 || true; } | grep -q wasmtime; then
  section "HTTP echo throughput on both engines, legacy without a session"
  WT_PORT=$((AIOD_PORT + 1))
  t0=$(date +%s%N)
  bin/aiod start --engine wasmtime --port "$WT_PORT" --plugins-dir build/plugins --cache-dir "$WORK/cache" --log-level warn 2>"$WORK/aiod-wasmtime.log" &
  WT_PID=$!; pids+=("$WT_PID")
  wait_http "http://127.0.0.1:$WT_PORT/mcp" "$LIST"
  wt_list=$((($(date +%s%N) - t0) / 1000000))
  until curl -sf "http://127.0.0.1:$WT_PORT/v1/capabilities" | grep -q '"loading":\[\]'; do sleep 0.02; done
  printf '%-28s %8s %14s %14s\n' "wasmtime, cold cache" "${wt_list} ms" "" "$((($(date +%s%N) - t0) / 1000000)) ms"
  sleep 1
  wt_idle_rss=$(rss_kb $WT_PID)
  "$PEERS/compare.sh" -d "$DURATION" -r "$ROUNDS" -c "$CONNS" "$BODY" \
    aiod-wazero="$URL" aiod-wasmtime=http://127.0.0.1:$WT_PORT/mcp ceiling=http://127.0.0.1:$CEIL_PORT/mcp | tee "$WORK/engines.txt"
  fig[wt_wazero]=$(col "$WORK/engines.txt" aiod-wazero 2) fig[wt_wasmtime]=$(col "$WORK/engines.txt" aiod-wasmtime 2)
  wt_warm_rss=$(rss_kb $WT_PID)
  kill "$WT_PID" 2>/dev/null || true
fi

section "HTTP echo throughput, legacy in a session"
init='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}'
sid() { # opens a session: initialize, then notifications/initialized
  local id
  id=$(curl -si -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d "$init" "$1" | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id" {print $2}')
  curl -s -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H "Mcp-Session-Id: $id" -H 'MCP-Protocol-Version: 2025-11-25' -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$1"
  echo "$id"
}
aiod_sid=$(sid "$URL"); gosdk_sid=$(sid http://127.0.0.1:$GOSDK_SESSION_PORT/)
if [[ -n $aiod_sid && -n $gosdk_sid ]]; then
  # compare.sh sends one header set to every target, so each runs alone
  # against its own session, alternating, and we print the same table.
  for name in gosdk aiod; do
    if [[ $name == gosdk ]]; then u=http://127.0.0.1:$GOSDK_SESSION_PORT/; s=$gosdk_sid; else u=$URL; s=$aiod_sid; fi
    "$PEERS/compare.sh" -d "$DURATION" -r "$ROUNDS" -c "$CONNS" -H "Mcp-Session-Id: $s" -H "MCP-Protocol-Version: 2025-11-25" "$BODY" "$name=$u" | tail -1
  done | tee "$WORK/session.txt" | awk 'BEGIN {printf "%-16s %12s %12s %10s\n","target","req/s","p99_ms","errors"} {print; r[NR]=$2} END {if (r[1]>0) printf "aiod/gosdk ratio: %.2f\n", r[2]/r[1]}'
  fig[session_gosdk]=$(col "$WORK/session.txt" gosdk 2) fig[session_aiod]=$(col "$WORK/session.txt" aiod 2)
else
  echo "skipped: could not open sessions (aiod: '${aiod_sid}', gosdk: '${gosdk_sid}')"
fi

section "HTTP echo throughput, modern 2026-07-28 (headers and _meta)"
MODERN=$WORK/modern-call.json
cat >"$MODERN" <<'JSON'
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}
JSON
"$PEERS/compare.sh" -d "$DURATION" -r "$ROUNDS" -c "$CONNS" \
  -H "MCP-Protocol-Version: 2026-07-28" -H "Mcp-Method: tools/call" -H "Mcp-Name: echo" "$MODERN" \
  gosdk=http://127.0.0.1:$GOSDK_PORT/ aiod="$URL" ceiling=http://127.0.0.1:$CEIL_PORT/mcp | tee "$WORK/modern.txt"
fig[modern_gosdk]=$(col "$WORK/modern.txt" gosdk 2) fig[modern_aiod]=$(col "$WORK/modern.txt" aiod 2)

section "Upstream forwarding: the go-sdk peer's echo through aiod vs direct (c=$CONNS)"
rm -f "$WORK/upstream-medians.txt"
GOSDK_URL=http://127.0.0.1:$GOSDK_PORT/ AIOD_URL=$URL FWD_PORT=$((AIOD_PORT + 2)) PEERS=$PEERS \
  DURATION=$DURATION ROUNDS=$ROUNDS CONNS=$CONNS .ci/bench-upstream.sh
# bench-upstream.sh leaves its medians in upstream-medians.txt: target req/s p99_ms
if [[ -s $WORK/upstream-medians.txt ]]; then
  fig[fwd_via]=$(col "$WORK/upstream-medians.txt" gosdk-via-aiod 2) fig[fwd_direct]=$(col "$WORK/upstream-medians.txt" gosdk-direct 2)
  fig[fwd_via_p99]=$(col "$WORK/upstream-medians.txt" gosdk-via-aiod 3) fig[fwd_direct_p99]=$(col "$WORK/upstream-medians.txt" gosdk-direct 3)
fi

section "Hot reload under load (p99 during swaps <= 2x, 0 failed calls, 250 ms from rename to serving)"
# Without the race detector and alone, as the targets are held (make test
# runs the same tests under -race with looser bounds).
go test -count=1 -v -run 'TestSwapUnderLoad$' ./host 2>&1 | tee "$WORK/swap.txt" | grep -E 'open fds|calls:|per reload|failed calls|^(--- )?(PASS|FAIL)|^ok' | sed 's/^ *reload_test.go:[0-9]*: //' || true
# calls: N without swaps (p50 A, p99 B), M during S swaps (p50 C, p99 D, R); rename to serving: median E, max F, max after the first G (...)
line=$(grep -m1 'calls: .* without swaps' "$WORK/swap.txt" || true)
if [[ -n $line ]]; then
  if read -r base_n base_p99 swap_n swap_p99 swap_ratio serving serving_max < <(sed -nE 's/.*calls: ([0-9]+) without swaps \(p50 [^,]*, p99 ([^)]*)\), ([0-9]+) during [0-9]+ swaps \(p50 [^,]*, p99 ([^,]*), ([0-9.]+)x\); rename to serving: median ([^,]*), max [^,]*, max after the first ([^ ]*) .*/\1 \2 \3 \4 \5 \6 \7/p' <<<"$line"); then
    fig[swap_ratio]=$swap_ratio
      fig[base_p99]=$(to_ms "$base_p99") fig[swap_p99]=$(to_ms "$swap_p99")
    fig[swap_calls]=$((base_n + swap_n)) fig[swap_failed]=0
    fig[swap_serving]=$(to_ms "$serving") fig[swap_serving_max]=$(to_ms "$serving_max")
  fi
fi
failed=$(sed -nE 's/.* ([0-9]+) failed calls during .*/\1/p' "$WORK/swap.txt" | head -1)
[[ -n $failed ]] && fig[swap_failed]=$failed
go test -count=1 -v -run 'TestReloadSwapSoak$' ./host/plugin 2>&1 | tee "$WORK/soak.txt" | grep -E 'swaps in|^(--- )?(PASS|FAIL)' | sed 's/^ *reload_test.go:[0-9]*: //' || true
# N swaps in T: fds A -> B, mappings C -> D, RSS E -> F KiB (...)
if read -r f0 f1 r0 r1 < <(sed -nE 's/.*swaps in .*: fds ([0-9]+) -> ([0-9]+), mappings [0-9]+ -> [0-9]+, RSS ([0-9]+) -> ([0-9]+) KiB.*/\1 \2 \3 \4/p' "$WORK/soak.txt" | head -1); then
  fig[soak_fd0]=$f0 fig[soak_fd1]=$f1 fig[soak_rss0]=$r0 fig[soak_rss1]=$r1
fi

section "Memory"
printf '%-28s %8s\n' "RSS idle (after start)" "${fig[rss_idle_mib]} MiB"
printf '%-28s %8s\n' "RSS with a warm pool" "${fig[rss_warm_mib]} MiB"
if [[ -n ${wt_idle_rss:-} ]]; then
  printf '%-28s %8s\n' "wasmtime RSS idle" "$((wt_idle_rss / 1024)) MiB"
  printf '%-28s %8s\n' "wasmtime RSS warm pool" "$((wt_warm_rss / 1024)) MiB"
fi

finish
