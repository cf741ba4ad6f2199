#!/usr/bin/env bash
# A role whose space is gone still leaves on SIGTERM, in bounded time: a nats-server on loopback
# (started here), an `acan manager` and an `acan handler` running a job over it; the server is
# stopped by its PID, and each role, told SIGTERM a second later, exits within 30 s (its bound is
# 5 s; the rest is room for a slow build on a busy machine; before, it took 6 minutes), non-zero,
# with a line that says why (each call to a lost server is otherwise retried for a minute, and a
# role would not answer the signal for minutes). Prints the times. Usage:
# stop_without_server.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
work=$(mktemp -d)
pids=()  # what this test starts: stopped by PID at exit (small_job.sh)
source "$(dirname "$0")/small_job.sh"
trap stop_started EXIT
fail() { echo "FAIL: $*" >&2; tail -n 20 "$work"/*.log >&2 || true; exit 1; }
limit_s=30

small_job "$work/job.toml" data 2 0 4000 3  # 3000 steps: far longer than the test
start_nats -1 || fail "nats-server did not report its port"
"$acan" manager "$work/job.toml" --space "$url" --name m0 --handlers 1 --out "$work/run" \
  > "$work/manager.log" 2>&1 &
manager=$!
pids+=("$manager")
"$acan" handler --space "$url" --job job --id 0 > "$work/handler.log" 2>&1 &
handler=$!
pids+=("$handler")
wait_line "$work/manager.log" "manager m0 holds the lease" > /dev/null || fail "no manager took the lease"
wait_line "$work/handler.log" "handler 0 joined job 'job'" > /dev/null || fail "the handler did not join"
sleep 1  # steps under way: the handler takes tasks, the manager waits on their reports

kill -TERM "$ns"
wait "$ns" 2>/dev/null || true
echo "stopped nats-server (pid $ns) in the middle of the run"
sleep 1  # both are now retrying a server that is gone

# gone PID: true once PID has exited (a zombie counts as exited).
# The state is read once: a process reaped between two reads of /proc (bash reaps its children
# when they end) reads as nothing, which counts as gone too.
gone() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2> /dev/null) || true
  [[ -z $state || $state == Z ]]
}
declare -A sent took code
for role in handler manager; do
  pid=${!role}
  sent[$role]=$EPOCHREALTIME
  kill -TERM "$pid"
done
deadline=$(( ${EPOCHREALTIME/./} + 40000000 ))  # microseconds: 40 s at most, then SIGKILL
for role in handler manager; do
  pid=${!role}
  while ! gone "$pid" && (( ${EPOCHREALTIME/./} < deadline )); do sleep 0.02; done
  if ! gone "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    took[$role]=">20"
  else
    took[$role]=$(/usr/bin/python3 -c "print(f'{$EPOCHREALTIME - ${sent[$role]}:.2f}')")
  fi
  rc=0
  wait "$pid" || rc=$?
  code[$role]=$rc
  echo "$role (pid $pid): SIGTERM with its server gone -> exit $rc after ${took[$role]} s"
done
for role in handler manager; do
  log="$work/$role.log"
  [[ ${took[$role]} != ">20" ]] || fail "the $role did not exit within 20 s of SIGTERM"
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('${took[$role]}') <= $limit_s else 1)" ||
    fail "the $role took ${took[$role]} s to exit after SIGTERM (at most $limit_s)"
  [[ ${code[$role]} -ne 0 ]] || fail "the $role exited 0 though it could not leave cleanly"
  line=$(grep -m1 "did not answer" "$log") || fail "the $role did not say why it exits: $(tail -3 "$log")"
  echo "  $role says: $line"
done
echo "PASS: with the space gone, SIGTERM ends a handler in ${took[handler]} s and a manager in ${took[manager]} s"
