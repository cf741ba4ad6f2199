#!/usr/bin/env bash
# A real Prometheus server (Debian's `prometheus`) on loopback scrapes a running `acan train
# --metrics-port` every second; through Prometheus's HTTP API the test sees the job's target up
# and acan_steps_applied_total increase between two queries. Label slow (Prometheus starts in
# seconds). Usage: prometheus.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/small_job.sh"
work=$(mktemp -d)
pids=()
trap stop_started EXIT
prometheus=$(need_tool prometheus)
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
small_job "$work/long.toml" data 2 1 2000 200
mport=$(free_port)
"$acan" train "$work/long.toml" --quiet --metrics-port "$mport" --out "$work/out" \
  > "$work/train.out" 2> "$work/train.err" &
pids+=("$!")
pport=$(free_port)
cat > "$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: acan
    static_configs:
      - targets: ['127.0.0.1:$mport']
YML
"$prometheus" --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$pport" > "$work/prometheus.log" 2>&1 &
pids+=("$!")
/usr/bin/python3 - "$pport" <<'PY'
import json, sys, time, urllib.parse, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}/api/v1/query?query="
def query(q):
    with urllib.request.urlopen(base + urllib.parse.quote(q), timeout=5) as r:
        d = json.load(r)
    assert d["status"] == "success", d
    return [float(x["value"][1]) for x in d["data"]["result"]]
def first(q, what, limit=90):
    end = time.time() + limit
    while time.time() < end:
        try:
            v = query(q)
            if v:
                return v[0]
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"FAIL: Prometheus never had {what}")
assert first('up{job="acan"} == 1', "the acan target up") == 1
a = first('acan_steps_applied_total{job="acan"}', "acan_steps_applied_total")
time.sleep(4)
b = first('acan_steps_applied_total{job="acan"}', "acan_steps_applied_total again")
print(f"Prometheus scraped acan_steps_applied_total: {a:.0f} -> {b:.0f}")
assert b > a, (a, b)
r = first('rate(acan_tasks_dispatched_total{job="acan"}[5s])', "a rate of dispatched tasks", 30)
print(f"rate(acan_tasks_dispatched_total[5s]) = {r:.1f}/s")
assert r > 0
PY
