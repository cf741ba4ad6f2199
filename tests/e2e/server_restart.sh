#!/usr/bin/env bash
# The space's server restarts in the middle of a run: a nats-server on loopback with file storage
# (started here, stopped by its PID), `acan train --processes 2` over it; once steps are being
# applied the server is SIGKILLed and started again on the same store and port. Every client
# reconnects on its own (NatsSpace retries a call until its deadline); the run completes with
# bitwise the weights of the in-process mem: run, and steps are applied after the restart (the
# handlers took tasks again). With storage "memory" the restarted server holds no stream at all:
# the run's clients make the job's streams again, and the job, its versions gone, is made again
# from its start by the manager that finds no state (the same bytes: the weights are bitwise the
# same), or ends naming what is gone. Usage: server_restart.sh ACAN_BINARY [file|memory]
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY [file|memory]}
storage=${2:-file}
work=$(mktemp -d)
pids=()  # what this test starts: stopped by PID at exit (small_job.sh)
source "$(dirname "$0")/small_job.sh"
trap stop_started EXIT
fail() { echo "FAIL: $*" >&2; tail -n 20 "$work"/*.log >&2 || true; exit 1; }

small_job "$work/job.toml" data 2 0 2000  # 500 steps
"$acan" train "$work/job.toml" --out "$work/mem" --quiet
want=$(weights_of "$work/mem/summary.json")

start_nats -1 || fail "nats-server did not report its port"
port=${url##*:}

"$acan" train "$work/job.toml" --space "$url?storage=$storage" --processes 2 --out "$work/run" \
  > "$work/train.log" 2>&1 &
train=$!
pids+=("$train")
# Steps are being applied: the manager's progress line says so (or metrics.csv has rows).
for _ in $(seq 1 600); do
  [[ -s "$work/run/metrics.csv" ]] && break
  grep -q "step [1-9]" "$work/train.log" 2>/dev/null && break
  sleep 0.05
done
sleep 0.5
kill -0 "$train" 2>/dev/null || fail "the run ended before the server was killed: a longer job"
kill -KILL "$ns"
wait "$ns" 2>/dev/null || true
echo "killed nats-server (pid $ns) in the middle of the run"
sleep 0.5
start_nats "$port" || fail "nats-server did not start again on port $port"
echo "started it again on port $port, the same store (pid $ns)"
wait "$train" || fail "the run failed after the server restart"
got=$(weights_of "$work/run/summary.json")
[[ "$got" == "$want" ]] || fail "weights $got differ from the mem: run's $want"
/usr/bin/python3 - "$work/run/summary.json" "$work/run/metrics.csv" <<'PY'
import csv, json, sys
s = json.load(open(sys.argv[1]))
assert s["steps"] == 500, s["steps"]
# A row is written at a step's end at most every 0.5 s: the pause is the longest gap.
rows = list(csv.DictReader(open(sys.argv[2])))
gaps = sorted(float(b["t_s"]) - float(a["t_s"]) for a, b in zip(rows, rows[1:]))
if gaps:
    print(f"longest pause between two metrics rows: {gaps[-1]:.2f} s (typical "
          f"{gaps[len(gaps) // 2]:.2f} s)")
# The oracle at the server, which watched every version put through the restart: each written
# once and in order.
assert s["oracle"]["verdict"] == "ok", s["oracle"]
print(f"{s['steps']} steps; retransmitted {s['tasks']['retransmitted']} "
      f"{s['tasks']['retransmit_reasons']}; restarts {s['processes']['restarts']}; "
      f"oracle {s['oracle']['verdict']}")
PY
echo "server restart: the run completed over the restarted server; weights bitwise the mem: run's"
