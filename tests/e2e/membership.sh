#!/usr/bin/env bash
# Elastic membership across processes (nats:local): while `acan train --processes 1` runs,
#  - a handler started from "another terminal" (same URI and job id) joins and runs tasks;
#  - a second one leaves cleanly on SIGTERM (exit 0, "left the job");
#  - a handler child of the supervisor is SIGKILLed: the supervisor sees it at once, says so and
#    starts it again;
# and the run still ends with bitwise the weights of the in-process mem: run.
# Usage: membership.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
work=$(mktemp -d)
pids=()  # what this test starts: stopped by PID at exit (small_job.sh)
source "$(dirname "$0")/small_job.sh"
trap stop_started EXIT

small_job "$work/job.toml" data 2 0 2000
"$acan" train "$work/job.toml" --out "$work/mem" --quiet
want=$(weights_of "$work/mem/summary.json")

"$acan" train "$work/job.toml" --space nats:local --processes 1 --out "$work/run" > "$work/train.log" 2>&1 &
sup=$!
pids+=("$sup")
url=""
for _ in $(seq 1 200); do
  url=$(grep -o 'nats://127.0.0.1:[0-9]*' "$work/train.log" | head -1 || true)
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "FAIL: no server address in the log" >&2; cat "$work/train.log" >&2; exit 1; }
# The banner comes once every child is started: the job is under way from here (the progress
# line is not printed when the output is not a terminal).

victim=$(ps -o pid=,args= --ppid "$sup" | awk '/ handler .*--id 0/ {print $1; exit}')
[[ -n "$victim" ]] || { echo "FAIL: no handler child of the supervisor" >&2; ps -o pid=,args= --ppid "$sup" >&2; cat "$work/train.log" >&2; exit 1; }
kill -KILL "$victim"

"$acan" handler --space "$url" --job job --id 9 > "$work/h9.log" 2>&1 &
h9=$!
pids+=("$h9")
"$acan" handler --space "$url" --job job --id 10 > "$work/h10.log" 2>&1 &
h10=$!
pids+=("$h10")
# SIGTERM once it has joined (before, its signals are not yet its own: a slow start, under ASan say,
# would die of it).
wait_line "$work/h10.log" "handler 10 joined job 'job'" > /dev/null
kill -TERM "$h10"
wait "$h10" || { echo "FAIL: a handler stopped by SIGTERM exited non-zero" >&2; cat "$work/h10.log" >&2; exit 1; }
grep -q 'left the job' "$work/h10.log" || { echo "FAIL: $(cat "$work/h10.log")" >&2; exit 1; }


wait "$sup" || { echo "FAIL: the run failed" >&2; cat "$work/train.log" >&2; exit 1; }
wait "$h9" || { echo "FAIL: the joined handler failed" >&2; cat "$work/h9.log" >&2; exit 1; }
cat "$work/h9.log" "$work/h10.log"
grep "died" "$work/train.log"
grep -q "handler h0 (pid $victim) died (killed by signal 9); started again" "$work/train.log" ||
  { echo "FAIL: the supervisor did not announce the SIGKILL" >&2; cat "$work/train.log" >&2; exit 1; }
/usr/bin/python3 - "$work/h9.log" "$work/run/summary.json" <<'PY'
import json, re, sys
h9 = open(sys.argv[1]).read()
m = re.search(r"(\d+) tasks, .* first task after ([0-9.]+) s; the job is finished", h9)
assert m and int(m.group(1)) > 0, h9
print(f"the joined handler ran {m.group(1)} tasks, its first {m.group(2)} s after it started")
s = json.load(open(sys.argv[2]))
assert s["processes"]["restarts"]["h0"] >= 1, s["processes"]
PY
got=$(weights_of "$work/run/summary.json")
[[ "$got" == "$want" ]] || { echo "FAIL: weights $got differ from the mem: run's $want" >&2; exit 1; }
echo "membership: join, SIGTERM leave and SIGKILL restart; weights bitwise the mem: run's"
