#!/usr/bin/env bash
# The children of `acan train --processes 2 --space nats:local` die with it: the supervisor is
# SIGKILLed in the middle of the run (it can clean nothing up), and within 30 s none of the
# processes it started (2 managers, 2 handlers, found by their parent's PID before the kill) and
# not its nats-server remains. Prints how long they took. Usage: supervisor_killed.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
work=$(mktemp -d)
pids=()  # what this test starts: stopped by PID at exit (small_job.sh)
children=()
source "$(dirname "$0")/small_job.sh"
cache=""  # the run's row cache: its supervisor, killed, cannot remove it
cleanup() {
  # Whatever of the run is left (a failed test): its processes, by the PIDs read before the kill.
  for p in "${children[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  if [[ -n "$cache" ]]; then rm -rf "$cache"; fi
  stop_started
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
limit_s=30  # its roles leave within 5 s of the signal their parent's death sends; room for a busy machine

small_job "$work/job.toml" data 2 0 4000 3  # 3000 steps: far longer than the test
"$acan" train "$work/job.toml" --space nats:local --processes 2 --out "$work/out" \
  > "$work/train.log" 2>&1 &
run=$!
pids+=("$run")
wait_line "$work/train.log" "holds the lease" > /dev/null || fail "the run did not start"
sleep 1  # steps under way

# gone PID: true once PID has exited (a zombie, not yet reaped by its new parent, counts).
# The state is read once: a process reaped between two reads of /proc (bash reaps its children
# when they end) reads as nothing, which counts as gone too.
gone() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2> /dev/null) || true
  [[ -z $state || $state == Z ]]
}
mapfile -t children < <(ps -o pid= --ppid "$run" | tr -d ' ')
server=""
for p in "${children[@]}"; do
  [[ $(cat "/proc/$p/comm" 2>/dev/null) == nats-server ]] && server=$p
done
cache=$(ps -o args= --ppid "$run" | grep -o -m1 -- '--data-cache [^ ]*' | cut -d' ' -f2 || true)
[[ -n "$server" ]] || fail "no nats-server among the run's children: $(ps -o pid=,args= --ppid "$run")"
(( ${#children[@]} == 5 )) || fail "5 children expected (2 managers, 2 handlers, the server): $(ps -o pid=,args= --ppid "$run")"
echo "the run (pid $run): children ${children[*]}, its nats-server $server; SIGKILL"
killed=$EPOCHREALTIME
kill -KILL "$run"
wait "$run" 2>/dev/null || true
deadline=$(( ${EPOCHREALTIME/./} + 40000000 ))  # microseconds: 40 s at most
left=("${children[@]}")
while (( ${#left[@]} > 0 )) && (( ${EPOCHREALTIME/./} < deadline )); do
  still=()
  for p in "${left[@]}"; do gone "$p" || still+=("$p"); done
  left=("${still[@]}")
  (( ${#left[@]} > 0 )) && sleep 0.05
done
took=$(/usr/bin/python3 -c "print(f'{$EPOCHREALTIME - $killed:.2f}')")
if (( ${#left[@]} > 0 )); then
  ps -o pid=,args= -p "$(IFS=,; echo "${left[*]}")" >&2 || true
  fail "${#left[@]} of the run's processes still run 30 s after its supervisor was SIGKILLed"
fi
echo "the supervisor SIGKILLed: all ${#children[@]} of its processes gone after $took s"
/usr/bin/python3 -c "import sys; sys.exit(0 if $took <= $limit_s else 1)" ||
  fail "its processes took $took s to go (at most $limit_s)"
if pgrep -f "$work/out/nats" > /dev/null; then fail "the run's nats-server is still running"; fi
echo "PASS"
