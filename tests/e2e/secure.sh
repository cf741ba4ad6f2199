#!/usr/bin/env bash
# A secure deployment through real processes: `acan secure init`, a run of processes
# over `nats:local?secure=DIR` (TLS, a role each) gives bitwise the weights of the same run in
# plain text; while it runs, a client with the handler's credentials that writes a parameter
# version or the lease is refused (PermissionDenied, logged by the server), a plain-text client
# and a handler with a wrong password are turned away with the cause named, and the job goes on.
# A capture of the loopback traffic (tcpdump) holds the model's bytes for the plain run and none
# of them for the secure one. Usage: secure.sh ACAN_BINARY SPACE_TOOL
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY SPACE_TOOL}
tool=${2:?usage: $0 ACAN_BINARY SPACE_TOOL}
work=$(mktemp -d)
pids=()
source "$(dirname "$0")/small_job.sh"
trap stop_started EXIT
tcpdump=$(need_tool tcpdump)

# capture FILE: tcpdump on loopback into FILE, once it says it listens; `cap` is its PID.
capture() {
  "$tcpdump" -i lo -U -s 0 -w "$1" tcp 2> "$1.err" &
  cap=$!
  pids+=("$cap")
  for _ in $(seq 1 100); do
    grep -q "listening on" "$1.err" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "FAIL: tcpdump did not start: $(cat "$1.err")" >&2
  return 1
}
stop_capture() { kill -INT "$cap"; wait "$cap" 2>/dev/null || true; }

small_job "$work/job.toml" data 2 0 480 2
dep="$work/deployment"
"$acan" secure init "$dep" > /dev/null

capture "$work/plain.pcap"
timeout 240 "$acan" train "$work/job.toml" --space nats:local --processes 2 --out "$work/plain" \
  --quiet
stop_capture
want=$(weights_of "$work/plain/summary.json")

capture "$work/secure.pcap"
timeout 240 "$acan" train "$work/job.toml" --space "nats:local?secure=$dep" --processes 2 \
  --out "$work/secure" > "$work/secure.log" 2>&1 &
run=$!
pids+=("$run")
addr=""
for _ in $(seq 1 300); do
  addr=$(grep -o 'tls://127\.0\.0\.1:[0-9]*' "$work/secure.log" | head -1 || true)
  [[ -n "$addr" ]] && break
  sleep 0.1
done
[[ -n "$addr" ]] || { echo "FAIL: the secure run printed no address: $(cat "$work/secure.log")" >&2; exit 1; }
# The job exists (its descriptor is in) before anyone tries to spoil it.
for _ in $(seq 1 300); do
  "$tool" "$addr?secure=$dep&role=observer" read 'job.p.>' 2>/dev/null | grep -q '^job\.p\.' && break
  sleep 0.1
done

expect_refused() {  # expect_refused WHAT EXPECTED_TEXT COMMAND...: non-zero, naming the cause
  local what=$1 text=$2
  shift 2
  if "$@" > "$work/attempt.out" 2>&1; then
    echo "FAIL: $what was let through" >&2
    exit 1
  fi
  if ! grep -q "$text" "$work/attempt.out"; then
    echo "FAIL: $what: expected '$text' in: $(cat "$work/attempt.out")" >&2
    exit 1
  fi
  echo "$what: refused ($(head -c 160 "$work/attempt.out"))"
}
rogue="$addr?secure=$dep&role=handler&request_ms=500&retry_ms=2000"
expect_refused "a handler writing a parameter version" "Permissions Violation" \
  "$tool" "$rogue" put job.p.l0.w.v1 rogue
expect_refused "a handler taking the lease" "Permissions Violation" \
  "$tool" "$rogue" swap-cell job.m.lease rogue
expect_refused "a plain-text client" "the server requires TLS" \
  "$tool" "nats://${addr#tls://}?retry_ms=1000" read 'job.>'
cp -r "$dep" "$work/wrong"
echo "not-the-password" > "$work/wrong/handler.password"
expect_refused "a handler with a wrong password" "does not accept role 'handler' with this password" \
  timeout 60 "$acan" handler --space "$addr?secure=$work/wrong&role=handler&retry_ms=1000" --job job
kill -0 "$run" 2>/dev/null || { echo "FAIL: the run ended before the attempts; make it longer" >&2; exit 1; }

wait "$run" || { echo "FAIL: the secure run failed: $(tail -5 "$work/secure.log")" >&2; exit 1; }
stop_capture
got=$(weights_of "$work/secure/summary.json")
echo "plain: $want; secure: $got"
[[ "$got" == "$want" ]] || { echo "FAIL: the secure run's weights differ from the plain run's" >&2; exit 1; }
grep -q 'Publish Violation - User "handler"' "$work/secure/nats/nats-server.log" || {
  echo "FAIL: the server did not log the handler's refused publishes" >&2
  exit 1
}
if grep -q "$dep/.*password\|$(cat "$dep/handler.password")" "$work/secure.log" "$work/secure/summary.json"; then
  echo "FAIL: a password is in the run's output or summary.json" >&2
  exit 1
fi

# The audit log of the secure run: the chain holds, ends with its model, and every record (the
# supervisor's permission refusals among them) is signed by the deployment's manager.
"$acan" audit verify "$work/secure/audit.jsonl" --model "$work/secure/model.safetensors" \
  --ca "$dep/ca.pem"
refused=$(grep -c '"kind":"permission_refused".*User \\"handler\\"' "$work/secure/audit.jsonl" || true)
echo "permission refusals in the audit log: $refused"
[[ $refused -ge 2 ]] || { echo "FAIL: the handler's refused writes are not in the audit log" >&2; exit 1; }

# The model's bytes (windows of 16 from each tensor of the final model, which the manager put
# as the last version) in each capture: some in plain text, none over TLS.
/usr/bin/python3 - "$work/plain/model.safetensors" "$work/plain.pcap" "$work/secure.pcap" <<'PY'
import json, struct, sys
model = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", model[:8])[0]
header = json.loads(model[8:8 + n])
data = model[8 + n:]
windows = []
for name, t in header.items():
    if name == "__metadata__":
        continue
    a, b = t["data_offsets"]
    for k in range(4):
        at = a + (b - a - 16) * k // 4
        if b - a >= 16:
            windows.append(data[at:at + 16])
plain, secure = open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
seen_plain = sum(1 for w in windows if w in plain)
seen_secure = sum(1 for w in windows if w in secure)
print(f"model byte windows found: {seen_plain} of {len(windows)} in the plain capture "
      f"({len(plain)} bytes), {seen_secure} in the TLS capture ({len(secure)} bytes)")
assert seen_plain > 0, "the check cannot see tensor bytes even in plain text"
assert seen_secure == 0, "tensor bytes in clear over TLS"
PY
echo "PASS"
