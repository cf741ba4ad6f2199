#!/usr/bin/env bash
# The audit log through the command: a run under crashes (handlers and the manager,
# in process) writes RUN_DIR/audit.jsonl, `acan audit verify` says the chain holds and the model
# is the job_end's; every kind of tampering with the file (a record altered, altered and
# re-hashed, removed, moved, inserted, the end cut off, another model) exits 1 and names the
# first bad line; the run's model with one weight changed exits 1 naming that tensor.
# Usage: audit.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
work=$(mktemp -d)
pids=()
source "$(dirname "$0")/small_job.sh"
trap stop_started EXIT
cd "$work"

small_job job.toml data 2 0 256 2
"$acan" train job.toml --out clean --quiet
timeout 240 "$acan" train job.toml --out chaos --quiet --crash-interval-steps 6 \
  --crash-probability 0.5 --crash-manager true
[[ $(weights_of chaos/summary.json) == $(weights_of clean/summary.json) ]] || {
  echo "FAIL: the run under crashes differs from the clean run" >&2
  exit 1
}
"$acan" audit verify chaos/audit.jsonl --model chaos/model.safetensors
/usr/bin/python3 - chaos/summary.json chaos/audit.jsonl <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
recs = [json.loads(l) for l in open(sys.argv[2])]
kinds = [r["kind"] for r in recs]
crashes = s.get("crashes", {})
print("records:", {k: kinds.count(k) for k in set(kinds)}, "crashes:", crashes)
assert kinds[0] == "job_start" and kinds[-1] == "job_end", kinds[:2] + kinds[-2:]
# A manager that crashed and the one that took over each took the lease.
assert kinds.count("lease") >= 2, "no take-over in the audit log of a run whose manager crashed"
# (a manager that crashed before it took the lease, or before its record was out, has none)
assert kinds.count("lease") <= 1 + crashes.get("manager", 0), (kinds.count("lease"), crashes)
# Every step's versions: in a versions record (steps [first, last], 64 a record), or found by a
# successor and named in its lease record (what a manager wrote after its last record).
covered = set()
for r in recs:
    if r["kind"] == "versions":
        first, last = r["steps"]
        assert 0 <= first <= last and last - first < 64, r["steps"]
        covered |= set(range(first, last + 1))
    elif r["kind"] == "lease" and r.get("versions"):
        covered |= set(range(min(v["version"] for v in r["versions"])))
total = recs[-1]["steps"]  # 256 rows in steps of 4, 2 epochs
assert total == 128, total
assert covered >= set(range(total)), sorted(set(range(total)) - covered)
assert recs[-1]["final_model_sha256"] == s["weights_sha256"]
PY

# tamper HOW: writes t.jsonl, a copy of the chain changed HOW.
tamper() {
  /usr/bin/python3 - chaos/audit.jsonl t.jsonl "$1" <<'PY'
import hashlib, json, sys
lines = open(sys.argv[1]).read().splitlines()
how = sys.argv[3]
def rehash(r):
    body = dict(r); body.pop("hash", None)
    r["hash"] = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return json.dumps(r, sort_keys=True, separators=(",", ":"))
r = json.loads(lines[4])
if how == "altered":
    r["time"] = "1999"; lines[4] = json.dumps(r, separators=(",", ":"))
elif how == "rehashed":
    r["time"] = "1999"; lines[4] = rehash(r)
elif how == "removed":
    del lines[4]
elif how == "moved":
    lines[4], lines[5] = lines[5], lines[4]
elif how == "inserted":
    f = json.loads(lines[3]); f["seq"] = 5; f["prev"] = json.loads(lines[3])["hash"]
    lines.insert(4, rehash(f))
elif how == "cut":
    lines.pop()
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
}
expect_bad() {  # expect_bad HOW LINE WORDS
  tamper "$1"
  local rc=0
  "$acan" audit verify t.jsonl > t.out 2>&1 || rc=$?
  if [[ $rc -ne 1 ]] || ! grep -q "t.jsonl:$2: .*$3" t.out; then
    echo "FAIL: $1: expected exit 1 and 'line $2: ...$3', got $rc: $(cat t.out)" >&2
    exit 1
  fi
  echo "$1: $(cat t.out)"
}
expect_bad altered 5 "altered"
expect_bad rehashed 6 "prev is not the hash of line 5"
expect_bad removed 5 "seq 6 where 5 was due"
expect_bad moved 5 "seq 6 where 5 was due"
expect_bad inserted 6 "seq 5 where 6 was due"
n=$(wc -l < chaos/audit.jsonl)
expect_bad cut $((n - 1)) "without a job_end"
# The clean run's model, bitwise the chaos run's weights, is the one the chain names too.
rc=0
"$acan" audit verify chaos/audit.jsonl --model clean/model.safetensors > /dev/null || rc=$?
[[ $rc -eq 0 ]] || { echo "FAIL: the clean run's model (the same weights) was refused" >&2; exit 1; }
# The run's model with one weight of layers.1.weight changed: refused, naming that tensor alone.
/usr/bin/python3 - chaos/model.safetensors altered.safetensors <<'PY'
import json, struct, sys
blob = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", blob[:8])[0]
begin = 8 + n + json.loads(blob[8:8 + n])["layers.1.weight"]["data_offsets"][0]
w = struct.unpack("<f", blob[begin:begin + 4])[0]
blob[begin:begin + 4] = struct.pack("<f", w + 0.5)
open(sys.argv[2], "wb").write(blob)
PY
rc=0
"$acan" audit verify chaos/audit.jsonl --model altered.safetensors > t.out 2>&1 || rc=$?
if [[ $rc -ne 1 ]] || ! grep -q "tensor 'layers.1.weight' is not shard" t.out ||
   grep -q "layers.0.weight\|layers.2.weight\|bias" t.out; then
  echo "FAIL: an altered model: expected exit 1 naming layers.1.weight alone, got $rc: $(cat t.out)" >&2
  exit 1
fi
echo "altered model: $(cat t.out)"
small_job other.toml data 2 0 64 1
"$acan" train other.toml --out other --quiet
rc=0
"$acan" audit verify chaos/audit.jsonl --model other/model.safetensors > t.out 2>&1 || rc=$?
[[ $rc -eq 1 ]] && grep -q "final model" t.out || { echo "FAIL: another model: $rc $(cat t.out)" >&2; exit 1; }
echo "another model: $(cat t.out)"
echo PASS
