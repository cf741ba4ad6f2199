#!/usr/bin/env bash
# The chunk digest's cost on one epoch of the flagship job (Fashion-MNIST, data
# strategy) over 2 handler processes in a secure deployment: the same run from BUILD_DIR and from
# a build of the same tree without the SHA-256 of chunked values (NODIGEST_BUILD_DIR, configured
# with -DCMAKE_CXX_FLAGS=-DACAN_BENCH_SKIP_DIGEST), alternating, ROUNDS pairs. nats:local allows
# 8 MB a message, so the flagship's values (0.8 MB at most) travel whole and no digest is made;
# CHUNK_BYTES (default 262144) makes every value over it travel in chunks, each hashed by its
# writer and its reader. Prints each pair, the median ratio of wall times and of the CPU time of
# every process of the run (user + system, GNU time: less noisy on a shared machine).
# Usage: [CHUNK_BYTES=N] bench/digest_overhead.sh BUILD_DIR NODIGEST_BUILD_DIR [ROUNDS]
set -euo pipefail
with=${1:?usage: $0 BUILD_DIR NODIGEST_BUILD_DIR [ROUNDS]}
without=${2:?usage: $0 BUILD_DIR NODIGEST_BUILD_DIR [ROUNDS]}
rounds=${3:-3}
chunk=${CHUNK_BYTES:-262144}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$with/src/cli/acan" secure init "$work/deployment" > /dev/null
sed -e 's/^epochs = 20/epochs = 1/' examples/fashion-mnist.toml > "$work/job.toml"
space="nats:local?secure=$work/deployment&chunk_bytes=$chunk"
for r in $(seq 1 "$rounds"); do
  for mode in without with; do
    build=$with
    [[ $mode == without ]] && build=$without
    /usr/bin/time -f "%U %S" -o "$work/$mode-$r.cpu" \
      "$build/src/cli/acan" train "$work/job.toml" --space "$space" --processes 2 \
      --out "$work/$mode-$r" --quiet > "$work/$mode-$r.log" 2>&1
  done
done
/usr/bin/python3 - "$work" "$rounds" "$chunk" <<'PY'
import json, statistics, sys
work, rounds, chunk = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ratios, cpu_ratios, sha = [], [], set()
cpu = lambda mode, r: sum(map(float, open(f"{work}/{mode}-{r}.cpu").read().split()[-2:]))
for r in range(1, rounds + 1):
    a = json.load(open(f"{work}/without-{r}/summary.json"))
    b = json.load(open(f"{work}/with-{r}/summary.json"))
    sha |= {a["weights_sha256"], b["weights_sha256"]}
    ratios.append(b["wall_s"] / a["wall_s"])
    cpu_ratios.append(cpu("with", r) / cpu("without", r))
    print(f"pair {r}: without the digest {a['wall_s']:.2f} s ({cpu('without', r):.1f} CPU s), "
          f"with it {b['wall_s']:.2f} s ({cpu('with', r):.1f} CPU s): {ratios[-1]:.3f}x wall, "
          f"{cpu_ratios[-1]:.3f}x CPU")
assert len(sha) == 1, "the runs' weights differ"
print(f"chunk_bytes={chunk}: with / without the digest, median {statistics.median(ratios):.3f}x "
      f"wall, {statistics.median(cpu_ratios):.3f}x CPU (every process of the run) over {rounds} "
      f"pairs (goal 1.02); weights bitwise equal")
PY
