#!/usr/bin/env bash
# What seeing a run costs: the flagship Fashion-MNIST job trained with /metrics, the
# live dashboard and trace.json on, against the same job with them off, in the same run, ABAB...
# so that drift on a shared machine hits both. While the "on" runs train, a scraper asks for
# /metrics and the dashboard's data every second (what Prometheus and an open page do).
# Prints each pair's training times and the ratio of the medians (goal: <= 1.03).
# Usage: bench/observe_overhead.sh [BUILD_DIR] [PAIRS] [CONFIG]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
pairs=${2:-3}
config=${3:-$root/examples/fashion-mnist.toml}
acan="$build/src/cli/acan"
[[ -x "$acan" ]] || { echo "error: $acan not found" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
train_s() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["train_s"])' "$1"; }
off=() on=()
for i in $(seq 1 "$pairs"); do
  "$acan" train "$config" --quiet --out "$tmp/off$i" > /dev/null
  off+=("$(train_s "$tmp/off$i/summary.json")")
  "$acan" train "$config" --quiet --trace --metrics-port 0 --dashboard 0 --out "$tmp/on$i" \
    > /dev/null 2> "$tmp/on$i.err" &
  pid=$!
  /usr/bin/python3 - "$tmp/on$i.err" "$pid" <<'PY' &
import os, re, sys, time, urllib.request
err, pid = sys.argv[1], int(sys.argv[2])
urls = []
while len(urls) < 2 and os.path.exists(f"/proc/{pid}"):
    urls = re.findall(r"http://127\.0\.0\.1:\d+/\S*", open(err).read())
    time.sleep(0.05)
metrics = [u for u in urls if u.endswith("/metrics")]
pages = [u + "api/run" for u in urls if u.endswith("/")]
while os.path.exists(f"/proc/{pid}"):
    for u in metrics + pages:
        try:
            urllib.request.urlopen(u, timeout=2).read()
        except OSError:
            pass
    time.sleep(1)
PY
  scraper=$!
  wait "$pid"
  wait "$scraper" || true
  on+=("$(train_s "$tmp/on$i/summary.json")")
  echo "pair $i: off ${off[-1]} s, on ${on[-1]} s"
done
/usr/bin/python3 - "${off[*]}" "${on[*]}" <<'PY'
import statistics, sys
off = [float(x) for x in sys.argv[1].split()]
on = [float(x) for x in sys.argv[2].split()]
m_off, m_on = statistics.median(off), statistics.median(on)
print(f"median training time: off {m_off:.2f} s, on {m_on:.2f} s; ratio on/off {m_on / m_off:.3f} (goal <= 1.03)")
PY
