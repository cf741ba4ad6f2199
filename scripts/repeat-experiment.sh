#!/usr/bin/env bash
# Runs one of the note's experiments N times in a row and reports, for each claim, how many runs
# it held in, and the distribution (min, median, max) of every figure experiment.json records.
#   scripts/repeat-experiment.sh ACAN NAME N [--quick] [--processes K] [--load]
# --load: another process keeps one core busy for the first run (a loaded machine).
# The runs' artefacts and a summary.json of the counts go to out/repeat-NAME[-quick]/.
set -euo pipefail
acan=${1:?usage: $0 ACAN NAME N [--quick] [--processes K] [--load]}
name=${2:?usage: $0 ACAN NAME N [--quick] [--processes K] [--load]}
n=${3:?usage: $0 ACAN NAME N [--quick] [--processes K] [--load]}
shift 3
args=() load=0 tag=""
while (($#)); do
  case $1 in
    --quick) args+=(--quick) tag+="-quick" ;;
    --processes) args+=(--processes "$2") tag+="-processes"; shift ;;
    --load) load=1 ;;
    *) echo "unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
dir="out/repeat-$name$tag"
rm -rf "$dir"
mkdir -p "$dir"
for i in $(seq 1 "$n"); do
  burner=""
  if ((load && i == 1)); then
    (while :; do :; done) &
    burner=$!
  fi
  start=$(date +%s%N)
  rc=0
  "$acan" experiment "$name" "${args[@]}" --out "$dir/run-$i" > "$dir/run-$i.log" 2>&1 || rc=$?
  [[ -n "$burner" ]] && kill "$burner"
  printf 'run %d: exit %d, %d s%s\n' "$i" "$rc" "$((($(date +%s%N) - start) / 1000000000))" \
    "$([[ -n "$burner" ]] && echo ' (a core loaded)')"
done
/usr/bin/python3 - "$dir" "$n" <<'PY'
import json, re, statistics, sys, os
d, n = sys.argv[1], int(sys.argv[2])
claims, figures, by_name = {}, {}, {}
def walk(prefix, v):
    if isinstance(v, bool):
        return
    if isinstance(v, (int, float)):
        figures.setdefault(prefix, []).append(float(v))
    elif isinstance(v, dict):
        for k, x in v.items():
            walk(f"{prefix}.{k}" if prefix else k, x)
for i in range(1, n + 1):
    for line in open(f"{d}/run-{i}.log"):
        m = re.match(r"claim: (.*?)(?: \(.*\))?: (yes|NO)$", line.strip())
        if m:
            c = claims.setdefault(m.group(1), [0, 0])
            c[0] += m.group(2) == "yes"
            c[1] += 1
    path = f"{d}/run-{i}/experiment.json"
    if os.path.exists(path):
        e = json.load(open(path))
        walk("", e)
        # Each claim's figure, goal and baseline, by name.
        for c in e.get("claims", []):
            k = by_name.setdefault(c["name"], {"held": 0, "runs": 0, "figures": [],
                                               "goal": c["goal"], "baseline": c["baseline"]})
            k["held"] += c["holds"] is True
            k["runs"] += 1
            if isinstance(c["figure"], (int, float)) and not isinstance(c["figure"], bool):
                k["figures"].append(float(c["figure"]))
print(f"{n} runs:")
for c, (held, seen) in claims.items():
    print(f"  {held}/{seen}  {c}")
for name, k in by_name.items():
    f = k["figures"]
    spread = f", figure {min(f):.4g}-{max(f):.4g} (median {statistics.median(f):.4g})" if f else ""
    print(f"  {name}: {k['held']}/{k['runs']}{spread}, goal {k['goal']}, against {k['baseline']}")
for k, v in sorted(figures.items()):
    if len(v) > 1 and len(set(v)) > 1:
        print(f"  {k}: min {min(v):.4g}, median {statistics.median(v):.4g}, max {max(v):.4g}")
json.dump({"runs": n, "claims": {c: {"held": h, "runs": s} for c, (h, s) in claims.items()},
           "claims_by_name": by_name,
           "figures": {k: {"min": min(v), "median": statistics.median(v), "max": max(v),
                           "values": v} for k, v in figures.items()}},
          open(f"{d}/summary.json", "w"), indent=2)
PY
