# Sourced by tests/e2e/memory_budget.sh and bench/wide_layer.sh (after small_job.sh): peak RSS of
# acan's role processes, read from outside (VmHWM in /proc/PID/status), never from acan's own count.
# hwm_of PID: its peak RSS in kB so far ("" once it is gone).
hwm_of() { awk '/VmHWM/{print $2}' "/proc/$1/status" 2>/dev/null || true; }
# peaks PID OUT: until PID exits, the peak VmHWM (kB) of every `acan handler` and `acan manager`
# it started, one line per process ("PID ROLE KB ID", ID a handler's --id, else -), into OUT.
peaks() {
  declare -A hwm role id
  local root=$1 out=$2 p v line
  while kill -0 "$root" 2>/dev/null; do
    for p in $(pgrep -P "$root" || true); do
      line=$({ tr '\0' ' ' < "/proc/$p/cmdline"; } 2>/dev/null || true)
      case "$line" in
        *" handler "*) role[$p]=handler
          id[$p]=$(sed -n 's/.* --id \([0-9]*\) .*/\1/p' <<< "$line ") ;;
        *" manager "*) role[$p]=manager ;;
        *) continue ;;
      esac
      v=$(hwm_of "$p")
      [[ -n "$v" ]] && (( v > ${hwm[$p]:-0} )) && hwm[$p]=$v
    done
    sleep 0.05
  done
  for p in "${!hwm[@]}"; do echo "$p ${role[$p]} ${hwm[$p]} ${id[$p]:--}"; done > "$out"
}
# highest FILE ROLE: the highest peak of that role's processes in a peaks file.
highest() { awk -v r="$2" '$2 == r {print $3}' "$1" | sort -n | tail -1; }
# spread FILE ROLE: "LOW-HIGH" of that role's peaks.
spread() { awk -v r="$2" '$2 == r {print $3}' "$1" | sort -n | sed -n '1p;$p' | paste -sd-; }
# baseline_peaks ACAN OUT: the role processes of a tiny tiles job (`train --processes 2` over
# nats:local), their peaks into OUT; uses $work and pids as small_job.sh's callers do.
baseline_peaks() {
  small_job "$work/small.toml" tiles 4 0 40
  "$1" train "$work/small.toml" --space nats:local --processes 2 --out "$work/small" --quiet \
    > "$work/small.log" 2>&1 &
  local run=$!
  pids+=("$run")
  peaks "$run" "$2"
  wait "$run" || { cat "$work/small.log" >&2; echo "FAIL: the baseline run failed" >&2; return 1; }
}
