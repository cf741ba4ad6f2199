#!/usr/bin/env bash
# What a run shows is what it did, on one `acan train` run with a held-out split,
# handlers of three speeds, and injected handler and manager crashes:
#  1. Every /metrics scrape, taken every 0.1 s over the whole run (20 at least), and then the
#     run's final page (OUT/metrics.prom): no counter series ever drops or vanishes.
#  2. metrics.prom passes `promtool check metrics` and equals summary.json (written from the run's result by other code) figure by
#     figure: steps, samples, versions, tasks by type, retransmissions by reason, duplicates,
#     the controller, crashes, per-handler tasks, work, busy time and crashes, the space.
#  3. The live dashboard, loaded while the run goes, and the run's report.html (from the file,
#     no network): the values Chart.js holds and draws, read back from Chart.js in headless
#     chromium (chart_values.py), are metrics.csv's rows and summary.json's epochs, shares (the
#     bars' heights as drawn), recovery histogram and fault totals; the header's steps are the
#     run's steps (not its versions applied); the throughput line ends at the last step
#     (check_numbers.py).
#  4. The report of a run of the same job with no crash: its recovery chart (and its fault chart,
#     unless a timeout retransmitted a task) says "none in this run" instead of empty axes.
# Usage: observe_numbers.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/small_job.sh"
work=$(mktemp -d)
pids=()
trap stop_started EXIT
need_tool chromium > /dev/null
promtool=$(need_tool promtool)
check() { /usr/bin/python3 "$here/check_numbers.py" "$@"; }

# Three classes of 8 features, 2500 training rows (625 steps an epoch), 200 held out.
/usr/bin/python3 - "$work" <<'PY'
import random, sys
rnd = random.Random(5)
def rows(n):
    out = []
    for _ in range(n):
        c = rnd.randrange(3)
        x = [rnd.gauss(0, 1) + (1.5 if i % 3 == c else 0) for i in range(8)]
        out.append(",".join(f"{v:.4f}" for v in x) + f",{c}\n")
    return "".join(out)
open(sys.argv[1] + "/train.csv", "w").write(rows(2500))
open(sys.argv[1] + "/test.csv", "w").write(rows(200))
PY
cat > "$work/job.toml" <<TOML
[model]
layers = [8, 16, 3]
activation = "tanh"
loss = "softmax_cross_entropy"
[data]
source = "csv"
path = "$work/train.csv"
test_path = "$work/test.csv"
[train]
epochs = 10
batch = 4
lr = 0.05
seed = 7
[partition]
strategy = "data"
task_size = 2
[runtime]
handlers = 3
window = 1
TOML

"$acan" train "$work/job.toml" --out "$work/run" --quiet --no-pin --metrics-port 0 --dashboard 0 \
  --speeds 1,16,32 --crash-interval-s 0.25 --crash-probability 0.5 --crash-manager true \
  > "$work/train.out" 2> "$work/train.err" &
train=$!
pids+=("$train")
metrics=$(wait_line "$work/train.err" 'http://127.0.0.1:[0-9]*/metrics')
dashboard=$(wait_line "$work/train.err" 'http://127.0.0.1:[0-9]*/$')
check scrape "$metrics" "$work/scrapes" "$train" 20 &
scraper=$!
# The dashboard while the run goes: read back once it has redrawn itself from the job twice and
# drawn an epoch (under sanitizers the first epoch can end after the second redraw).
/usr/bin/python3 "$here/chart_values.py" "$dashboard" "$work/dashboard.json" 2 --epochs 1 &
reader=$!
wait "$scraper"
wait "$reader"
wait "$train" || { echo "FAIL: acan train failed:" >&2; cat "$work/train.err" >&2; exit 1; }

said=$("$promtool" check metrics < "$work/run/metrics.prom" 2>&1) || true
[[ -z "$said" ]] || { echo "FAIL: promtool on metrics.prom: $said" >&2; exit 1; }
check monotonic "$work/scrapes" "$work/run/metrics.prom"
check final "$work/run"
check charts "$work/run" "$work/dashboard.json" dashboard
# The report from the file, every request sent to a proxy where nothing listens (observe.sh).
/usr/bin/python3 "$here/chart_values.py" "file://$work/run/report.html" "$work/report.json" 1 \
  --proxy-server="socks5://127.0.0.1:9" --proxy-bypass-list="<-loopback>"
check charts "$work/run" "$work/report.json" report
# 4. The same job, nothing injected.
if ! "$acan" train "$work/job.toml" --out "$work/clean" --quiet --no-pin > "$work/clean.out" \
    2> "$work/clean.err"; then
  echo "FAIL: acan train (clean) failed:" >&2
  cat "$work/clean.err" >&2
  exit 1
fi
/usr/bin/python3 "$here/chart_values.py" "file://$work/clean/report.html" "$work/clean.json" 1 \
  --proxy-server="socks5://127.0.0.1:9" --proxy-bypass-list="<-loopback>"
check charts "$work/clean" "$work/clean.json" report
echo "observe_numbers: /metrics monotonic, metrics.prom = summary.json, charts = the run's" \
  "records; a run with no crash says so"
