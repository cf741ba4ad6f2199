#!/usr/bin/env bash
# Kill anywhere: handler process h0 of `acan train --processes 2` over nats:local is SIGKILLed at
# a chosen point of its task cycle (ACAN_TEST_KILL_AT=<point>:<n>, common/kill_point.h: after a
# take, after a claim, after the kernel, after the outputs but before the report, after the
# report, between two chunks of a value), once in the run (ACAN_TEST_KILL_ONCE); the supervisor
# starts it again. Each time: the kill happened (h0 restarted once, and said where), the run completes with
# bitwise the weights of the in-process mem: run, and the version oracle at the server saw every
# version written once, in order (nothing applied twice). The chunk case splits values into 4 KiB
# chunks (a job with 32 KiB gradients): the put cut short leaves no tuple, so no torn value is
# ever read; the oracle cannot see chunked values there, the weights say it.
# Usage: kill_points.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
work=$(mktemp -d)
pids=()
source "$(dirname "$0")/small_job.sh"
trap stop_started EXIT

small_job "$work/small.toml" data 2 0 64  # 16 steps of 2 micro-batches
# The chunk case: a layer of 64 x 128 weights, gradients of 32 KiB.
sed -e 's/^layers = .*/layers = [64, 128, 3]/' "$work/small.toml" > "$work/wide.toml"
for job in small wide; do
  "$acan" train "$work/$job.toml" --out "$work/$job-mem" --quiet
done

run_case() {  # run_case POINT N JOB SPACE
  local out="$work/$1-$2"
  ACAN_TEST_KILL_AT="$1:$2" ACAN_TEST_KILL_HANDLER=0 ACAN_TEST_KILL_ONCE="$out.killed" timeout 300 \
    "$acan" train "$work/$3.toml" --space "$4" --processes 2 --out "$out" > "$out.log" 2>&1 \
    || { cat "$out.log" >&2; echo "FAIL: $1:$2: the run failed" >&2; exit 1; }
  grep -q "killed at $1:$2" "$out.log" \
    || { cat "$out.log" >&2; echo "FAIL: $1:$2: h0 never reached the point" >&2; exit 1; }
  /usr/bin/python3 - "$out/summary.json" "$work/$3-mem/summary.json" "$1:$2" <<'PY'
import json, sys
s, mem, case = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
r = s["processes"]["restarts"]
assert r["h0"] == 1 and r["h1"] == 0 and r["m0"] == 0 and r["m1"] == 0, (case, r)
assert s["weights_sha256"] == mem["weights_sha256"], f"{case}: weights differ from the mem: run"
verdict = s["oracle"]["verdict"]
if not case.startswith("chunk"):
    assert verdict == "ok", (case, s["oracle"])
print(f"{case}: killed, restarted once; bitwise the mem: run; retransmitted "
      f"{s['tasks']['retransmitted']} {s['tasks']['retransmit_reasons']}; oracle: {verdict}")
PY
}

for c in take:1 take:3 claim:1 claim:4 kernel:1 kernel:3 output:1 output:4 done:1 done:3; do
  run_case "${c%%:*}" "${c##*:}" small nats:local
done
for c in chunk:1 chunk:6; do
  run_case "${c%%:*}" "${c##*:}" wide "nats:local?chunk_bytes=4096"
done
echo "kill points: every kill inside the task cycle cost time, never the result"
