#!/usr/bin/env bash
# A secure deployment under attack by a handler's own credentials, on a nats-server
# this test starts with the deployment's configuration, for a job whose values travel in chunks
# of 1 KiB:
#  1. a clean secure run: bitwise the plain run's weights, no chunk left behind without its tuple
#     (attack.py leftovers, as the observer), and no request of acan's own roles refused (the
#     server's log);
#  2. a run while attack.py (the NATS protocol from Python, not acan's client) forges every
#     chunked value it sees: a manager's chunks are refused by the server, a handler's are
#     replaced and refused by the reader's digest check (tampering records in the audit log);
#     then another job's subjects and streams, purges, the fenced and cells streams and other
#     roles' replies are refused, and deleting one of its own job's tasks is let through. The
#     weights are still bitwise the plain run's;
#  3. a run whose tuple stream is purged 20 times (every tuple lost at once, as a server that
#     restarts without them): it recovers from the fenced stream and the cells, bitwise.
# Usage: secure_attack.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
here=$(dirname "$0")
work=$(mktemp -d)
pids=()
source "$here/small_job.sh"
trap stop_started EXIT

# Layers of 64x48 floats (12 KiB): every version, gradient and proposal is chunked.
cat > "$work/job.toml" <<TOML
[model]
layers = [64, 48, 3]
activation = "tanh"
loss = "mse"
[data]
source = "synthetic"
samples = 2400
[train]
epochs = 1
batch = 8
lr = 0.05
seed = 7
[partition]
strategy = "data"
task_size = 4
[runtime]
handlers = 2
window = 1
TOML
dep="$work/deployment"
"$acan" secure init "$dep" > /dev/null

timeout 240 "$acan" train "$work/job.toml" --space 'nats:local?chunk_bytes=1024' --processes 2 \
  --out "$work/plain" --quiet
want=$(weights_of "$work/plain/summary.json")

# secure_server NAME: a nats-server with the deployment's configuration and a store of its own;
# sets `addr` (tls://127.0.0.1:PORT) and `log`.
secure_server() {
  local server=${ACAN_NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}
  mkdir -p "$work/$1"
  { cat "$dep/nats-server.conf"; echo "max_payload: 8MB"; } > "$work/$1/server.conf"
  log="$work/$1/nats-server.log"
  "$server" -c "$work/$1/server.conf" -a 127.0.0.1 -p -1 -js -sd "$work/$1/js" \
    --ports_file_dir "$work/$1" > "$log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  addr=""
  for _ in $(seq 1 100); do
    addr=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nats"][0])' \
      "$work/$1/nats-server_$pid.ports" 2>/dev/null || true)
    [[ -n "$addr" ]] && break
    sleep 0.1
  done
  [[ -n "$addr" ]] || { echo "FAIL: nats-server did not start: $(cat "$log")" >&2; exit 1; }
  addr="tls://${addr#*://}"
}

echo "== a clean secure run"
secure_server clean
timeout 240 "$acan" train "$work/job.toml" --space "$addr?secure=$dep&chunk_bytes=1024" \
  --processes 2 --out "$work/clean" --quiet
got=$(weights_of "$work/clean/summary.json")
echo "plain: $want; secure: $got"
[[ "$got" == "$want" ]] || { echo "FAIL: the secure run's weights differ from the plain run's" >&2; exit 1; }
left=$(/usr/bin/python3 "$here/attack.py" leftovers "$addr" "$dep")
echo "after the clean run: $left"
/usr/bin/python3 - "$left" <<'PY'
import json, sys
a = json.loads(sys.argv[1])
assert a["chunked_tuples"] > 0, "the check sees no chunked tuple: the job's values were not chunked"
assert a["orphans"] == 0, f"chunks left behind without their tuple: {a}"
PY
if grep -q "Violation" "$log"; then
  echo "FAIL: the server refused requests of acan's own roles:" >&2
  grep "Violation" "$log" | head -5 >&2
  exit 1
fi
# The audit log: signed by the deployment's manager, the space's copy, its model; a chain
# re-hashed end to end, and a model with one tensor changed, are refused and named.
"$acan" audit verify "$work/clean/audit.jsonl" --model "$work/clean/model.safetensors" \
  --ca "$dep/ca.pem" --space "$addr?secure=$dep&role=observer"
/usr/bin/python3 - "$work/clean" <<'PY'
import hashlib, json, struct, sys
run = sys.argv[1]
lines = open(f"{run}/audit.jsonl").read().splitlines()
prev = "0" * 64
out = []
for i, line in enumerate(lines):
    r = json.loads(line)
    if i == 2:
        r["time"] = "1999-01-01T00:00:00.000Z"
    r["prev"] = prev
    body = {k: v for k, v in r.items() if k not in ("hash", "sig")}
    r["hash"] = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    prev = r["hash"]
    out.append(json.dumps(r, sort_keys=True, separators=(",", ":")))
open(f"{run}/rehashed.jsonl", "w").write("\n".join(out) + "\n")
model = bytearray(open(f"{run}/model.safetensors", "rb").read())
n = struct.unpack("<Q", model[:8])[0]
header = json.loads(model[8:8 + n])
a, _ = header["layers.1.bias"]["data_offsets"]
at = 8 + n + a
struct.pack_into("<f", model, at, struct.unpack_from("<f", model, at)[0] + 1.0)
open(f"{run}/altered.safetensors", "wb").write(bytes(model))
PY
if ! "$acan" audit verify "$work/clean/rehashed.jsonl" > "$work/v1" 2>&1; then
  echo "FAIL: the re-hashed chain does not even hold as a chain: $(cat "$work/v1")" >&2; exit 1
fi
if "$acan" audit verify "$work/clean/rehashed.jsonl" --ca "$dep/ca.pem" > "$work/v1" 2>&1; then
  echo "FAIL: a chain re-hashed end to end verified against the CA" >&2; exit 1
fi
grep -q "rehashed.jsonl:3: not signed by the deployment" "$work/v1" || {
  echo "FAIL: the re-hashed record is not named: $(cat "$work/v1")" >&2; exit 1; }
if "$acan" audit verify "$work/clean/audit.jsonl" --model "$work/clean/altered.safetensors" \
  > "$work/v2" 2>&1; then
  echo "FAIL: an altered model verified" >&2; exit 1
fi
grep -q "tensor 'layers.1.bias' is not shard 'param.l1.b''s final version" "$work/v2" || {
  echo "FAIL: the altered tensor is not named: $(cat "$work/v2")" >&2; exit 1; }
echo "audit: a re-hashed chain and an altered tensor are refused and named"

echo "== a secure run under attack"
secure_server attacked
timeout 240 "$acan" train "$work/job.toml" --space "$addr?secure=$dep&chunk_bytes=1024" \
  --processes 2 --out "$work/attacked" > "$work/attacked.log" 2>&1 &
run=$!
pids+=("$run")
account=$(/usr/bin/python3 "$here/attack.py" run "$addr" "$dep" 6)
echo "attacker: $account"
kill -0 "$run" 2>/dev/null || { echo "FAIL: the run ended before the attacks; make it longer" >&2; exit 1; }
wait "$run" || { echo "FAIL: the attacked run failed: $(tail -5 "$work/attacked.log")" >&2; exit 1; }
got=$(weights_of "$work/attacked/summary.json")
echo "plain: $want; attacked: $got"
[[ "$got" == "$want" ]] || { echo "FAIL: the attacked run's weights differ from the plain run's" >&2; exit 1; }
"$acan" audit verify "$work/attacked/audit.jsonl" --model "$work/attacked/model.safetensors" > /dev/null
tampering=$(grep -c '"kind":"tampering"' "$work/attacked/audit.jsonl" || true)
echo "tampering records in the audit log: $tampering"
/usr/bin/python3 - "$account" "$tampering" <<'PY'
import json, sys
a, tampering = json.loads(sys.argv[1]), int(sys.argv[2])
assert a["manager_chunk_forgeries"] > 0, "no manager's value was seen chunked"
assert a["manager_chunk_forgeries_refused"] == a["manager_chunk_forgeries"], \
    f"a handler wrote a chunk of a manager's value: {a}"
assert a["handler_chunks_forged"] > 0, f"no handler's chunk could be forged: {a}"
assert tampering > 0, f"{a['handler_chunks_forged']} forged chunks and no tampering recorded"
let_through = [p for p, refused in a["probes"].items() if not refused]
assert not let_through, f"let through: {let_through}"
assert a["own_task_deleted"], "deleting a task of its own job (a take) was refused"
PY

echo "== a secure run whose tuple stream is purged, again and again"
secure_server purged
timeout 240 "$acan" train "$work/job.toml" --space "$addr?secure=$dep&chunk_bytes=1024" \
  --processes 2 --out "$work/purged" > "$work/purged.log" 2>&1 &
run=$!
pids+=("$run")
purged=$(/usr/bin/python3 "$here/attack.py" purge "$addr" "$dep" 20 0.25)
echo "purger: $purged"
kill -0 "$run" 2>/dev/null || { echo "FAIL: the run ended before the purges; make it longer" >&2; exit 1; }
wait "$run" || { echo "FAIL: the purged run failed: $(tail -5 "$work/purged.log")" >&2; exit 1; }
got=$(weights_of "$work/purged/summary.json")
echo "plain: $want; purged: $got"
[[ "$got" == "$want" ]] || { echo "FAIL: the purged run's weights differ from the plain run's" >&2; exit 1; }
[[ "$purged" == '{"purges": 20}' ]] || { echo "FAIL: the purges were not all made: $purged" >&2; exit 1; }
echo "PASS"
