# Sourced by tests/e2e/memory_budget.sh and bench/wide_layer.sh: peak RSS of acan's role
# processes, read from outside (VmHWM in /proc/PID/status), never from acan's own count.
# peaks PID OUT: until PID exits, the peak VmHWM (kB) of every `acan handler` and `acan manager`
# it started, one line per process ("PID ROLE KB"), into OUT.
peaks() {
  declare -A hwm role
  local root=$1 out=$2 p v line
  while kill -0 "$root" 2>/dev/null; do
    for p in $(pgrep -P "$root" || true); do
      line=$({ tr '\0' ' ' < "/proc/$p/cmdline"; } 2>/dev/null || true)
      case "$line" in
        *" handler "*) role[$p]=handler ;;
        *" manager "*) role[$p]=manager ;;
        *) continue ;;
      esac
      v=$(awk '/VmHWM/{print $2}' "/proc/$p/status" 2>/dev/null || true)
      [[ -n "$v" ]] && (( v > ${hwm[$p]:-0} )) && hwm[$p]=$v
    done
    sleep 0.05
  done
  for p in "${!hwm[@]}"; do echo "$p ${role[$p]} ${hwm[$p]}"; done > "$out"
}
# highest FILE ROLE: the highest peak of that role's processes in a peaks file.
highest() { awk -v r="$2" '$2 == r {print $3}' "$1" | sort -n | tail -1; }
# spread FILE ROLE: "LOW-HIGH" of that role's peaks.
spread() { awk -v r="$2" '$2 == r {print $3}' "$1" | sort -n | sed -n '1p;$p' | paste -sd-; }
