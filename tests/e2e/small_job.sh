# Sourced by the multi-process end-to-end tests: small_job FILE STRATEGY TASK_SIZE STAGES SAMPLES
# writes a small MLP job (steps of 4 synthetic rows, window 1); weights_of SUMMARY prints its
# weights_sha256; stop_started (an EXIT trap) sends SIGTERM to each PID in the caller's `pids`,
# waits for them and removes the caller's `work` directory.
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
epochs = 1
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
weights_of() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["weights_sha256"])' "$1"; }
stop_started() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
