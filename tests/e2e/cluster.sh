#!/usr/bin/env bash
# A 3-node NATS cluster losing a node: three nats-server processes on loopback (JetStream, file
# storage, one cluster; started here, stopped by their PIDs), `acan train --processes 2` over
# all three (nats://A,B,C?replicas=3: the tuple, chunk and cell streams kept on every node). The
# node leading the tuple stream is SIGKILLed mid-run and started again on its store 10 s later. The run completes with
# bitwise the weights of the in-process mem: run; the longest pause (the longest gap between two
# rows of the manager's metrics.csv, written at a step's end at most every 0.5 s) is printed next to NATS's leader election timeout
# (4-9 s in nats-server's raft.go). Label slow. Usage: cluster.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
server=${ACAN_NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}
work=$(mktemp -d)
pids=()
source "$(dirname "$0")/small_job.sh"
trap stop_started EXIT
fail() { echo "FAIL: $*" >&2; tail -n 20 "$work"/*.log >&2 || true; exit 1; }

small_job "$work/job.toml" data 2 0 8000  # 2000 steps
"$acan" train "$work/job.toml" --out "$work/mem" --quiet
want=$(weights_of "$work/mem/summary.json")

# Nine free loopback ports: client, cluster and monitoring port of each node.
read -r -a port < <(/usr/bin/python3 - <<'PY'
import socket
socks = [socket.socket() for _ in range(9)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks: s.close()
PY
)
declare -A node
start_node() {  # start_node I
  local i=$1
  cat > "$work/n$i.conf" <<CONF
server_name: n$i
listen: 127.0.0.1:${port[$((3 * i))]}
http: 127.0.0.1:${port[$((3 * i + 2))]}
jetstream { store_dir: "$work/js$i" }
cluster {
  name: acan
  listen: 127.0.0.1:${port[$((3 * i + 1))]}
  routes: [nats-route://127.0.0.1:${port[1]}, nats-route://127.0.0.1:${port[4]}, nats-route://127.0.0.1:${port[7]}]
}
CONF
  "$server" -c "$work/n$i.conf" >> "$work/n$i.log" 2>&1 &
  node[$i]=$!
  pids+=("$!")
}
healthy() {  # healthy I: the node's JetStream is up and in the cluster
  /usr/bin/python3 - "${port[$((3 * $1 + 2))]}" <<'PY' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=1) as r:
    sys.exit(0 if json.load(r).get("status") == "ok" else 1)
PY
}
for i in 0 1 2; do start_node "$i"; done
for i in 0 1 2; do
  for _ in $(seq 1 300); do healthy "$i" && break; sleep 0.1; done
  healthy "$i" || fail "node n$i did not become healthy"
done
uri="nats://127.0.0.1:${port[0]},127.0.0.1:${port[3]},127.0.0.1:${port[6]}?replicas=3&storage=file"
echo "3-node cluster up: $uri"

"$acan" train "$work/job.toml" --space "$uri" --processes 2 --out "$work/run" \
  > "$work/train.log" 2>&1 &
train=$!
pids+=("$train")
for _ in $(seq 1 600); do
  [[ -s "$work/run/metrics.csv" ]] && break
  sleep 0.05
done
sleep 1
kill -0 "$train" 2>/dev/null || fail "the run ended before the node was killed: a longer job"
# The worst node to lose: the leader of the tuple stream (every take and put goes through it).
leader=$(/usr/bin/python3 - "${port[2]}" <<'PY'
import json, sys, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/jsz?accounts=true&streams=true"
with urllib.request.urlopen(url, timeout=2) as r:
    z = json.load(r)
for a in z.get("account_details", []):
    for st in a.get("stream_detail", []):
        if st["name"] == "acan":
            print(st.get("cluster", {}).get("leader", "n0")[1:])
            sys.exit(0)
print(0)
PY
)
kill -KILL "${node[$leader]}"
echo "killed node n$leader (pid ${node[$leader]}), the tuple stream's leader, mid-run"
sleep 10
kill -0 "$train" 2>/dev/null && { start_node "$leader"; echo "started n$leader again on its store"; }
wait "$train" || fail "the run failed after losing a node"
got=$(weights_of "$work/run/summary.json")
[[ "$got" == "$want" ]] || fail "weights $got differ from the mem: run's $want"
/usr/bin/python3 - "$work/run/metrics.csv" "$work/run/summary.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
s = json.load(open(sys.argv[2]))
# A row is written at a step's end at most every 0.5 s: a pause is a long gap between two rows.
gaps = sorted(float(b["t_s"]) - float(a["t_s"]) for a, b in zip(rows, rows[1:]))
longest, typical = gaps[-1], gaps[len(gaps) // 2]
print(f"{s['steps']} steps; longest pause between two metrics rows: {longest:.1f} s (typical "
      f"{typical:.2f} s); NATS leader election timeout: 4-9 s; retransmitted {s['tasks']['retransmitted']} "
      f"{s['tasks']['retransmit_reasons']}; restarts {s['processes']['restarts']}; oracle "
      f"{s['oracle']['verdict']}")
PY
echo "cluster: the run completed over a 3-node cluster that lost a node; weights bitwise"
