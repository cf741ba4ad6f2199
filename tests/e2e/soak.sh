#!/usr/bin/env bash
# Soak (labels slow and soak): trains under the robustness chaos (handlers and the manager crash
# with p = 1 every 5 s, speeds 1:5:10: examples/robustness.toml) for SECONDS (default 1800) and samples, every 10 s, the
# memory the run holds (RSS of every process of the run), the space's resident bytes (its
# /metrics: acan_space_resident_bytes), and its open file descriptors and threads. After a
# warm-up (the first third: the bounded histories, runtime/decimated.h, are full after 8.5
# minutes), each series' least-squares slope must project a growth over the
# rest of the run within a bound: RSS within max(5% of its median, 8 MiB), resident bytes within
# max(10% of its median, 256 KiB); fds and threads may not exceed their first-half peak by more
# than 2 in the second half. The run ends with SIGTERM: one process dies of it (143); a run of
# processes stops every process cleanly (130), and none is left.
#   soak.sh ACAN_BINARY in-process [SECONDS]  -- threads in one process, the mem: space
#   soak.sh ACAN_BINARY processes [SECONDS]   -- 3 handler processes and 2 managers, SIGKILLed, on a
#                                                private nats-server (nats:local)
# The samples go to $ACAN_SOAK_OUT/soak-MODE.csv when ACAN_SOAK_OUT is set, with each role's RSS
# (the supervisor, nats-server, managers, handlers) in soak-MODE-roles.csv, whose slopes it prints.
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY in-process|processes [SECONDS]}
mode=${2:?usage: $0 ACAN_BINARY in-process|processes [SECONDS]}
seconds=${3:-1800}
work=$(mktemp -d)
pids=()
source "$(dirname "$0")/small_job.sh"
trap stop_started EXIT
fail() { echo "FAIL: $*" >&2; tail -n 20 "$work"/run.log >&2 || true; exit 1; }

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The note's robustness job (examples/robustness.toml), for a million epochs.
sed 's/^epochs = .*/epochs = 1000000/' "$(dirname "$0")/../../examples/robustness.toml" >"$work/job.toml"
case $mode in
  in-process) args=() ;;
  processes) sed -i 's/^handlers = 4/handlers = 3/' "$work/job.toml"; args=(--processes 3 --space nats:local) ;;
  *) fail "mode '$mode': in-process or processes" ;;
esac
"$acan" train "$work/job.toml" "${args[@]}" --out "$work/run" --quiet --metrics-port "$port" \
  >"$work/run.log" 2>&1 &
run=$!
pids+=("$run")

# descendants PID: PID and every process below it.
descendants() {
  local p=$1 c
  echo "$p"
  for c in $(pgrep -P "$p" || true); do descendants "$c" || true; done
}
csv="$work/samples.csv"
echo "t_s,rss_kb,resident_bytes,fds,threads,processes" >"$csv"
roles="$work/roles.csv"
echo "t_s,role,rss_kb" >"$roles"
# role PID: what the process is in the run, from its command line.
role() {
  local args
  args=$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" || true)
  case $args in
    *nats-server*) echo nats-server ;;
    *" manager "*) echo managers ;;
    *" handler "*) echo handlers ;;
    *) echo supervisor ;;
  esac
}
start=$(date +%s)
while (($(date +%s) - start < seconds)); do
  sleep 10
  kill -0 "$run" 2>/dev/null || fail "the run ended by itself before $seconds s"
  rss=0 fds=0 threads=0 n=0
  declare -A by_role=()
  for p in $(descendants "$run"); do
    [[ -r /proc/$p/status ]] || continue
    r=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
    k=$(role "$p")
    by_role[$k]=$((${by_role[$k]:-0} + ${r:-0}))
    t=$(awk '/^Threads:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
    f=$( (ls "/proc/$p/fd" 2>/dev/null || true) | wc -l)  # a killed process may be gone
    rss=$((rss + ${r:-0})) threads=$((threads + ${t:-0})) fds=$((fds + f)) n=$((n + 1))
  done
  resident=$(curl -s --max-time 5 "http://127.0.0.1:$port/metrics" |
    awk '/^acan_space_resident_bytes/ {v = $2} END {print v}' || true)
  now=$(($(date +%s) - start))
  echo "$now,$rss,${resident:-},$fds,$threads,$n" >>"$csv"
  for k in "${!by_role[@]}"; do echo "$now,$k,${by_role[$k]}" >>"$roles"; done
  unset by_role
done
children=$(descendants "$run" | tail -n +2)
kill -TERM "$run"
rc=0
timeout 120 tail --pid="$run" -f /dev/null || fail "the run did not stop within 120 s of SIGTERM"
wait "$run" || rc=$?
want=$([[ $mode == processes ]] && echo 130 || echo 143)
[[ $rc -eq $want ]] || fail "the run exited $rc after SIGTERM, not $want"
for p in $children; do
  if kill -0 "$p" 2>/dev/null; then fail "process $p of the run outlived it"; fi
done
if [[ -n ${ACAN_SOAK_OUT:-} ]]; then
  cp "$csv" "$ACAN_SOAK_OUT/soak-$mode.csv"
  cp "$roles" "$ACAN_SOAK_OUT/soak-$mode-roles.csv"
fi
/usr/bin/python3 - "$roles" <<'PY'
import csv, collections, statistics, sys
by = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    by[r["role"]].append((float(r["t_s"]), float(r["rss_kb"]) / 1024))
for role, pts in sorted(by.items()):
    pts = pts[len(pts) // 3:]
    if len(pts) < 3:
        continue
    xs, ys = [p[0] / 60 for p in pts], [p[1] for p in pts]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs) or 1
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den
    print(f"  {role}: RSS median {statistics.median(ys):.1f} MiB, slope {k * 1024:+.0f} KiB/min")
PY
/usr/bin/python3 - "$csv" "$mode" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))]
if len(rows) < 8:
    sys.exit(f"FAIL: only {len(rows)} samples")
warm = len(rows) // 3
after = rows[warm:]
def slope(key):
    pts = [(float(r["t_s"]), float(r[key])) for r in after if r[key] != ""]
    if len(pts) < 4:
        sys.exit(f"FAIL: {key}: {len(pts)} samples after the warm-up")
    mt = statistics.fmean(t for t, _ in pts); mv = statistics.fmean(v for _, v in pts)
    b = sum((t - mt) * (v - mv) for t, v in pts) / sum((t - mt) ** 2 for t, _ in pts)
    span = pts[-1][0] - pts[0][0]
    return b, b * span, statistics.median(v for _, v in pts), span
bad = []
for key, unit, frac, floor in (("rss_kb", 1024, 0.05, 8 << 20), ("resident_bytes", 1, 0.10, 256 << 10)):
    b, growth, median, span = slope(key)
    growth_b, median_b = growth * unit, median * unit
    bound = max(frac * median_b, floor)
    print(f"{sys.argv[2]}: {key}: median {median_b / 2**20:.2f} MiB, slope {b * unit * 60 / 1024:.1f} KiB/min,"
          f" projected growth over {span / 60:.1f} min {growth_b / 2**20:+.2f} MiB (bound {bound / 2**20:.2f} MiB)")
    if growth_b > bound:
        bad.append(key)
half = len(after) // 2
for key in ("fds", "threads", "processes"):
    first = max(int(r[key]) for r in after[:half]); second = max(int(r[key]) for r in after[half:])
    print(f"{sys.argv[2]}: {key}: peak {first} in the first half, {second} in the second")
    if second > first + 2:
        bad.append(key)
if bad:
    sys.exit("FAIL: growing: " + ", ".join(bad))
print(f"{sys.argv[2]}: flat over {len(rows)} samples")
PY
