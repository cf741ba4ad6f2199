#!/usr/bin/env bash
# Soak (labels slow and soak): trains under the robustness chaos (handlers and the manager crash
# with p = 1 every 5 s, speeds 1:5:10: examples/robustness.toml) for SECONDS (default 1800) and
# samples, every 10 s, the memory the run holds (RSS of every process of the run, by role), the
# space's resident bytes (its /metrics: acan_space_resident_bytes), its open file descriptors,
# threads and processes, and, across processes, what nats:local's server keeps (Go's heap after a
# collection, the part of it in the de-duplication ids and block caches, its closed-connection
# records); every 2 s, each process's peak RSS (VmHWM), so
# that restarted roles are judged by their incarnations' peaks. soak_judge.py judges the samples:
# after a warm-up (the first third: the bounded histories, runtime/core/decimated.h, are full after
# 8.5 minutes), each series' least-squares slope, projected over the rest of the run, must stay
# within its bound (listed there); fds, threads and processes may not exceed their first-half
# peak by more than 2 in the second half. The run ends with SIGTERM: one process dies of it
# (143); a run of processes stops every process cleanly (130), and none is left.
#   soak.sh ACAN_BINARY in-process [SECONDS]  -- threads in one process, the mem: space
#   soak.sh ACAN_BINARY processes [SECONDS]   -- 3 handler processes and 2 managers, SIGKILLed, on a
#                                                private nats-server (nats:local)
# The samples go to $ACAN_SOAK_OUT/soak-MODE-{samples,roles,incarnations,server}.csv when
# ACAN_SOAK_OUT is set (soak_judge.py DIR MODE soak-MODE- judges them again).
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY in-process|processes [SECONDS]}
mode=${2:?usage: $0 ACAN_BINARY in-process|processes [SECONDS]}
seconds=${3:-1800}
work=$(mktemp -d)
pids=()
source "$(dirname "$0")/small_job.sh"
trap stop_started EXIT
fail() { echo "FAIL: $*" >&2; tail -n 20 "$work"/run.log >&2 || true; exit 1; }

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
# The note's robustness job (examples/robustness.toml), for a million epochs.
sed 's/^epochs = .*/epochs = 1000000/' "$(dirname "$0")/../../examples/robustness.toml" >"$work/job.toml"
case $mode in
  in-process) args=() ;;
  processes)
    sed -i 's/^handlers = 4/handlers = 3/' "$work/job.toml"; args=(--processes 3 --space nats:local)
    # nats:local's server, started with its monitoring and profiling ports on loopback, so that
    # the soak can read what the server keeps (closed connections) and Go's own accounts of its
    # heap after a collection, beside its RSS.
    mport=$(free_port) pport=$(free_port)
    real_server=${ACAN_NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}
    printf '#!/bin/sh\nexec %q "$@" -m %d --profile %d\n' "$real_server" "$mport" "$pport" \
      >"$work/nats-server"
    chmod +x "$work/nats-server"
    export ACAN_NATS_SERVER="$work/nats-server"
    ;;
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
server="$work/server.csv"
echo "t_s,rss_kb,heap_alloc,heap_sys,heap_released,dedupe_bytes,block_cache_bytes,closed_connections" >"$server"
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
# Every process's peak RSS (VmHWM), read every 2 s: a restarted role (a handler or manager process
# SIGKILLed every few seconds and started again) is judged by its incarnations' peaks, not by its
# RSS at whatever age a sample finds it.
declare -A hwm=() born=() last=() role_of=()
start=$(date +%s)
sampled=0
while (($(date +%s) - start < seconds)); do
  sleep 2
  kill -0 "$run" 2>/dev/null || fail "the run ended by itself before $seconds s"
  now=$(($(date +%s) - start))
  procs=$(descendants "$run")
  for p in $procs; do
    h=$(awk '/^VmHWM:/ {print $2}' "/proc/$p/status" 2>/dev/null || true)
    [[ -n "$h" ]] || continue
    if [[ -z ${born[$p]:-} ]]; then born[$p]=$now; role_of[$p]=$(role "$p"); fi
    last[$p]=$now
    ((h > ${hwm[$p]:-0})) && hwm[$p]=$h
  done
  ((now - sampled >= 10)) || continue  # the rest every 10 s
  sampled=$now
  rss=0 fds=0 threads=0 n=0 server_rss=""
  declare -A by_role=()
  for p in $procs; do
    [[ -r /proc/$p/status ]] || continue
    r=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
    k=${role_of[$p]:-$(role "$p")}  # known since the peak was read, unless it just started
    by_role[$k]=$((${by_role[$k]:-0} + ${r:-0}))
    [[ $k == nats-server ]] && server_rss=$r
    t=$(awk '/^Threads:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
    f=$( (ls "/proc/$p/fd" 2>/dev/null || true) | wc -l)  # a killed process may be gone
    rss=$((rss + ${r:-0})) threads=$((threads + ${t:-0})) fds=$((fds + f)) n=$((n + 1))
  done
  resident=$(curl -s --max-time 5 "http://127.0.0.1:$port/metrics" |
    awk '/^acan_space_resident_bytes/ {v = $2} END {print v}' || true)
  echo "$now,$rss,${resident:-},$fds,$threads,$n" >>"$csv"
  for k in "${!by_role[@]}"; do echo "$now,$k,${by_role[$k]}" >>"$roles"; done
  unset by_role
  if [[ $mode == processes ]]; then
    # Go's accounts after a collection (gc=1) and what its heap profile puts in the two stores
    # nats-server 2.9 keeps at their high-water mark; the closed connections it keeps.
    stats=$(curl -s --max-time 5 "http://127.0.0.1:$pport/debug/pprof/heap?debug=1&gc=1" |
      /usr/bin/python3 "$(dirname "$0")/soak_judge.py" --heap 2>/dev/null || true)
    closed=$(curl -s --max-time 5 "http://127.0.0.1:$mport/connz?state=closed&limit=1" |
      /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])' 2>/dev/null || true)
    echo "$now,${server_rss:-},${stats:-,,,,},${closed:-}" >>"$server"
  fi
done
incarnations="$work/incarnations.csv"
echo "pid,role,born_s,last_s,hwm_kb" >"$incarnations"
for p in "${!hwm[@]}"; do echo "$p,${role_of[$p]},${born[$p]},${last[$p]},${hwm[$p]}" >>"$incarnations"; done
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
  for f in samples roles incarnations server; do cp "$work/$f.csv" "$ACAN_SOAK_OUT/soak-$mode-$f.csv"; done
fi
/usr/bin/python3 "$(dirname "$0")/soak_judge.py" "$work" "$mode"
