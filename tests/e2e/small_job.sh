# Sourced by the multi-process end-to-end tests: small_job FILE STRATEGY TASK_SIZE STAGES SAMPLES
# [EPOCHS] writes a small MLP job (steps of 4 synthetic rows, window 1, 1 epoch unless told); weights_of SUMMARY prints its
# weights_sha256; wait_line FILE REGEX waits for a line; stop_started (an EXIT trap) sends SIGTERM to each PID in the caller's `pids`,
# waits for them and removes the caller's `work` directory; start_nats (below) starts a server.
small_job() {
  cat > "$1" <<TOML
[model]
layers = [12, 16, 8, 3]
activation = "tanh"
loss = "mse"
init = "xavier_uniform"
[data]
source = "synthetic"
samples = $5
shuffle = true
[train]
epochs = ${6:-1}
batch = 4
lr = 0.05
seed = 7
[partition]
strategy = "$2"
task_size = $3
stages = $4
[runtime]
handlers = 2
window = 1
space = "mem:"
TOML
}
# need_tool NAME: the path of a tool the test cannot do without, or a failure naming it.
need_tool() {
  local path
  path=$(command -v "$1" || echo "/usr/bin/$1")
  [[ -x "$path" ]] || { echo "FAIL: $1 is missing (scripts/install-deps.sh --tests installs it)" >&2; return 1; }
  echo "$path"
}
# wait_line FILE REGEX: prints the first match of REGEX in FILE once it is there (60 s), or fails
# printing the file.
wait_line() {
  for _ in $(seq 1 600); do
    if line=$(grep -m1 -o "$2" "$1" 2>/dev/null); then echo "$line"; return 0; fi
    sleep 0.1
  done
  echo "FAIL: no '$2' in $1:" >&2; cat "$1" >&2; return 1
}
weights_of() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["weights_sha256"])' "$1"; }
stop_started() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
# start_nats PORT: a nats-server on 127.0.0.1 (PORT, or -1 for a free one), JetStream on, its store
# in $work/js (the same store when started again), added to `pids`; sets `ns` to its PID and `url`
# to its address once it reports its port (non-zero status if it does not within 10 s).
start_nats() {
  local server=${ACAN_NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}
  "$server" -a 127.0.0.1 -p "$1" -js -sd "$work/js" --ports_file_dir "$work" \
    >> "$work/nats.log" 2>&1 &
  ns=$!
  pids+=("$ns")
  url=""
  for _ in $(seq 1 100); do
    if [[ -f "$work/nats-server_$ns.ports" ]]; then
      url=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nats"][0])' \
        "$work/nats-server_$ns.ports" 2>/dev/null || true)
      [[ -n "$url" ]] && return 0
    fi
    sleep 0.1
  done
  return 1
}
