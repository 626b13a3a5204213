#!/usr/bin/env bash
# bench-http.sh [-d SECONDS] [-c CONNECTIONS] [-r ROUNDS] [-b BASE] [-k FILE] [-H 'Name: value']... BODY NAME=PID=URL...
#
# HTTP load as ../shared/peers/compare.sh takes it (wrk, one thread, the
# targets in turn each round, medians), and beside each run the CPU the
# server process and wrk itself spent on it, from /proc/PID/stat and the
# shell's times. Prints per target the medians of req/s, p50 and p99 (ms),
# the errors summed, the server's CPU per request and wrk's (µs). PID is
# the server's process: the CPU per request is the server's own cost,
# which neither the load generator's share of the two cores nor the other
# processes on them move the way they move req/s (BENCHMARKS.md, "Peers
# and load"). The last two columns are each target against BASE (a NAME;
# the first target without -b), the median of the rounds' own ratios
# (each round's runs follow one another, so drift between rounds cancels):
# req/s over BASE's, and BASE's CPU per request over the target's. -k
# appends every run's figures to FILE (round name req/s p50 p99 errors
# cpu_us wrk_us).
set -euo pipefail
secs=5 conns=16 rounds=3 headers=() base='' keep=''
while getopts "d:c:r:b:k:H:" o; do
  case $o in d) secs=$OPTARG ;; c) conns=$OPTARG ;; r) rounds=$OPTARG ;; b) base=$OPTARG ;; k) keep=$OPTARG ;; H) headers+=("$OPTARG") ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
(($# >= 2)) || { sed -n '2,17p' "$0"; exit 2; }
command -v wrk >/dev/null || { echo "bench-http: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
body=$1; shift
[[ -r $body ]] || { echo "bench-http: cannot read body file $body" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
{
  echo 'wrk.method = "POST"'
  echo 'wrk.headers["Content-Type"] = "application/json"'
  echo 'wrk.headers["Accept"] = "application/json, text/event-stream"'
  for h in "${headers[@]}"; do
    printf 'wrk.headers["%s"] = "%s"\n' "${h%%:*}" "$(echo "${h#*:}" | sed 's/^ *//')"
  done
  printf 'wrk.body = [==[%s]==]\n' "$(cat "$body")"
  echo 'done = function(summary, latency, requests)'
  echo '  io.write(string.format("RESULT %.1f %.3f %.3f %d %d\n", summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.requests))'
  echo 'end'
} >"$tmp/req.lua"
tck=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || true; } # utime + stime, in ticks; empty once it is gone
names=() pids=() urls=()
for t in "$@"; do
  IFS='=' read -r n p u <<<"$t"
  [[ -n $n && $p =~ ^[0-9]+$ && -n $u ]] || { echo "bench-http: want NAME=PID=URL, got $t" >&2; exit 2; }
  [[ -r /proc/$p/stat ]] || { echo "bench-http: no process $p for $n" >&2; exit 2; }
  names+=("$n") pids+=("$p") urls+=("$u")
done
b=0
if [[ -n $base ]]; then
  b=-1
  for i in "${!names[@]}"; do [[ ${names[$i]} == "$base" ]] && b=$i; done
  ((b >= 0)) || { echo "bench-http: no target named $base" >&2; exit 2; }
fi
for ((r = 0; r < rounds; r++)); do
  for i in "${!urls[@]}"; do
    s0=$(cpu "${pids[$i]}")
    # wrk's own CPU: bash's time of the pipeline, user and system seconds
    { TIMEFORMAT='WRKCPU %U %S'; time wrk -t1 -c"$conns" -d"${secs}s" -s "$tmp/req.lua" "${urls[$i]}" >"$tmp/out" || true; } 2>"$tmp/time"
    s1=$(cpu "${pids[$i]}")
    if ! read -r rps p50 p99 errs n < <(awk '/^RESULT/ {print $2, $3, $4, $5, $6}' "$tmp/out"); then
      echo "bench-http: wrk gave no result for ${names[$i]} (round $r)" >&2
      continue
    fi
    w=$(awk '/^WRKCPU/ {print $2 + $3}' "$tmp/time")
    # one line a run: round req/s p50 p99 errors cpu_us wrk_us (the CPU 0
    # if the server was gone by the end)
    awk -v r="$r" -v rps="$rps" -v p50="$p50" -v p99="$p99" -v e="$errs" -v n="$n" -v s0="$s0" -v s1="$s1" -v t="$tck" -v w="$w" \
      'BEGIN {printf "%d %s %s %s %s %.2f %.2f\n", r, rps, p50, p99, e, (n > 0 && s0 != "" && s1 != "" ? (s1 - s0) / t / n * 1e6 : 0), (n > 0 ? w / n * 1e6 : 0)}' >>"$tmp/$i"
    [[ -z $keep ]] || tail -1 "$tmp/$i" | awk -v name="${names[$i]}" '{$1 = $1 " " name; print}' >>"$keep"
  done
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# paired FIELD BASE-OVER-TARGET: the median of the rounds' ratios to the
# base, each round's run of the target against the same round's of the base
paired() {
  [[ -s $tmp/$b ]] || { echo 0; return; }
  awk -v f="$1" -v inv="$2" 'NR == FNR {base[$1] = $f; next} ($1 in base) {x = base[$1]; y = $f; if (x > 0 && y > 0) print (inv ? x / y : y / x)}' "$tmp/$b" "$tmp/$i" | median
}
printf '%-16s %12s %9s %9s %8s %12s %12s %10s %10s\n' target req/s p50_ms p99_ms errors cpu_us/req wrk_us/req rps/base base/cpu
for i in "${!urls[@]}"; do
  [[ -s $tmp/$i ]] || { printf '%-16s (no run answered)\n' "${names[$i]}"; continue; }
  printf '%-16s %12.0f %9.3f %9.3f %8d %12.2f %12.2f %10.3f %10.3f\n' "${names[$i]}" \
    "$(cut -d' ' -f2 "$tmp/$i" | median)" "$(cut -d' ' -f3 "$tmp/$i" | median)" "$(cut -d' ' -f4 "$tmp/$i" | median)" \
    "$(awk '{s += $5} END {print s + 0}' "$tmp/$i")" "$(cut -d' ' -f6 "$tmp/$i" | median)" "$(cut -d' ' -f7 "$tmp/$i" | median)" \
    "$(paired 2 0)" "$(paired 6 1)"
done
