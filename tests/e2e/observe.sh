#!/usr/bin/env bash
# Seeing a run, through the acan command and real tools:
#  1. `acan train --metrics-port 0 --dashboard 0` on a job that runs for a while: /metrics passes
#     `promtool check metrics` and its step counter grows (polled for, 120 s at most); the dashboard,
#     loaded from the running job by headless chromium, draws data points from the run, updates
#     itself, and its console shows no error.
#  2. A finished run's report.html, opened from the file in headless chromium with no network
#     to reach: charts drawn, no error, and nothing in it loads from outside the file.
#  3. `acan manager` and `acan handler` processes serve /metrics too (promtool again).
#  4. The supervisor of `acan train --processes` serves the job as it watches it: /metrics
#     (promtool, the space's resident tuples from the server) and the dashboard (chromium).
# Usage: observe.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/small_job.sh"
work=$(mktemp -d)
pids=()
trap stop_started EXIT
promtool=$(need_tool promtool)
chromium=$(need_tool chromium)
browse() {  # browse URL OUT: the page's DOM after its scripts ran, chromium's log beside it
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$work/chromium" --virtual-time-budget=4000 --dump-dom "$1" > "$2" 2> "$2.log"
}
scrape() { /usr/bin/python3 -c 'import sys,urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$1"; }
counter() { awk -v n="$1" '$1 ~ "^"n"({|$)" {print $2; exit}' "$2"; }
# wait_steps URL OUT [ABOVE]: scrapes URL into OUT until acan_steps_applied_total is above ABOVE
# (0 unless given); fails after 120 s (a run that moves at all moves far sooner).
wait_steps() {
  local above=${3:-0} steps
  for _ in $(seq 1 1200); do
    scrape "$1" > "$2"
    steps=$(counter acan_steps_applied_total "$2")
    [[ -n "$steps" ]] && /usr/bin/python3 -c 'import sys; sys.exit(not float(sys.argv[1]) > float(sys.argv[2]))' \
      "$steps" "$above" && return 0
    sleep 0.1
  done
  echo "FAIL: acan_steps_applied_total in $1's metrics did not pass $above in 120 s (last: ${steps:-none})" >&2
  return 1
}
# promcheck FILE: `promtool check metrics` finds nothing to say about FILE.
promcheck() {
  local said
  said=$("$promtool" check metrics < "$1" 2>&1) || true
  [[ -z "$said" ]] || { echo "FAIL: promtool on $1: $said" >&2; return 1; }
}

# 1. A run far longer than the looking (it is stopped once seen): 4000 epochs of 2000 rows.
small_job "$work/long.toml" data 2 1 2000 4000
"$acan" train "$work/long.toml" --metrics-port 0 --dashboard 0 --out "$work/long" \
  > "$work/long.out" 2> "$work/long.err" &
pids+=("$!")
metrics=$(wait_line "$work/long.err" 'http://127.0.0.1:[0-9]*/metrics')
dashboard=$(wait_line "$work/long.err" 'http://127.0.0.1:[0-9]*/$')
wait_steps "$metrics" "$work/m1.txt"
promcheck "$work/m1.txt"
s1=$(counter acan_steps_applied_total "$work/m1.txt")
wait_steps "$metrics" "$work/m2.txt" "$s1"  # the counter grows: an event, not a fixed sleep
s2=$(counter acan_steps_applied_total "$work/m2.txt")
echo "acan_steps_applied_total: $s1 -> $s2"
/usr/bin/python3 -c 'import sys; a,b=map(float,sys.argv[1:]); assert b > a > 0, (a,b)' "$s1" "$s2"
for name in acan_tasks_completed_total acan_task_seconds_bucket acan_handler_busy_seconds_total \
            acan_timeout_seconds acan_pouch acan_space_resident_tuples \
            acan_space_operation_seconds_bucket acan_training_loss acan_manager_crashes_total; do
  grep -q "^$name{" "$work/m2.txt" || { echo "FAIL: no $name in /metrics" >&2; exit 1; }
done
browse "$dashboard" "$work/dashboard.html"
# Points from the run in every live chart, the page updated itself, no error.
/usr/bin/python3 "$here/page_dom.py" "$work/dashboard.html" dashboard 2 \
  c-throughput c-controller c-space c-share c-faults
kill -TERM "${pids[-1]}" 2>/dev/null || true

# 2. A finished run's report, from the file, the network off.
"$acan" train "$here/../../examples/feasibility.toml" --quiet --out "$work/done" > /dev/null
[[ -f "$work/done/report.html" ]] || { echo "FAIL: acan train wrote no report.html" >&2; exit 1; }
rm "$work/done/report.html"
"$acan" report "$work/done" > /dev/null
/usr/bin/python3 - "$work/done/report.html" <<'PY'
import re, sys
page = open(sys.argv[1]).read()
outside = re.findall(r'<(?:script|link|img|iframe)[^>]+(?:src|href)\s*=', page, re.I)
assert not outside, f"report.html loads from outside itself: {outside[:3]}"
assert "window.ACAN_DATA" in page and "Chart" in page
PY
# No network for the browser: every request goes to a proxy where nothing listens (a network
# namespace would do, but chromium waits there for its own services); a chart drawn then came
# from the file alone.
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --no-first-run --user-data-dir="$work/chromium2" \
  --proxy-server="socks5://127.0.0.1:9" --proxy-bypass-list="<-loopback>" \
  --virtual-time-budget=3000 --dump-dom \
  "file://$work/done/report.html" > "$work/report.dom" 2> "$work/report.dom.log"
/usr/bin/python3 "$here/page_dom.py" "$work/report.dom" report 1 c-epochs=2 c-throughput

# 3. Role processes over NATS serve /metrics.
start_nats -1
small_job "$work/roles.toml" data 2 1 400 20
"$acan" manager "$work/roles.toml" --space "$url" --job-id obs --quiet --handlers 1 \
  --metrics-port 0 > "$work/m.out" 2> "$work/m.err" &
roles=("$!")
"$acan" handler --space "$url" --job obs --id 0 --quiet --metrics-port 0 \
  > "$work/h.out" 2> "$work/h.err" &
roles+=("$!")
for role in m h; do
  u=$(wait_line "$work/$role.err" 'http://127.0.0.1:[0-9]*/metrics')
  sleep 1
  scrape "$u" > "$work/$role.txt"
  promcheck "$work/$role.txt"
done
grep -q '^acan_space_operation_seconds_bucket{job="obs",role="handler"' "$work/h.txt"
grep -q '^acan_handler_tasks_total{job="obs",role="handler"' "$work/h.txt"
grep -q '^acan_up{job="obs",role="manager"' "$work/m.txt"
# The roles leave on SIGTERM while their server still runs (the EXIT trap stops it after).
kill -TERM "${roles[@]}"
wait "${roles[@]}" || true

# 4. The supervisor of a run of processes (over its own nats:local), stopped once seen.
"$acan" train "$work/long.toml" --space nats:local --processes 2 --quiet --metrics-port 0 \
  --dashboard 0 --out "$work/procs" > "$work/p.out" 2> "$work/p.err" &
supervisor=$!
metrics=$(wait_line "$work/p.err" 'http://127.0.0.1:[0-9]*/metrics')
dashboard=$(wait_line "$work/p.err" 'http://127.0.0.1:[0-9]*/$')
wait_steps "$metrics" "$work/p.txt"  # the watch has seen steps
sleep 1.5  # a few samples for the charts
scrape "$metrics" > "$work/p.txt"
promcheck "$work/p.txt"
grep -q '^acan_space_resident_tuples{job="job",role="supervisor"}' "$work/p.txt"
grep -q '^acan_handler_tasks_total{job="job",role="supervisor",handler="1"}' "$work/p.txt"
browse "$dashboard" "$work/procs.html"
/usr/bin/python3 "$here/page_dom.py" "$work/procs.html" supervisor 2 \
  c-throughput c-share c-space
kill -TERM "$supervisor"
wait "$supervisor" || true
echo "observe: /metrics, dashboard and report checked"
