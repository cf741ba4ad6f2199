#!/usr/bin/env bash
# Runs one libFuzzer target from its seed corpus: fuzz/run.sh BINARY CORPUS_DIR [libFuzzer flags].
# ACAN_FUZZ_SECONDS (default 30) bounds the run. New inputs go to a scratch corpus, never into the
# repository; a crash, leak, timeout or allocation over the bounds fails the run and leaves the
# input in ./fuzz-artifacts/ (printed), to be added to CORPUS_DIR as a regression test.
# Bounds: -rss_limit_mb=2048 (the process), -malloc_limit_mb=256 (one allocation: the targets
# set acan's input limits to 64 MiB, fuzz/fuzz_util.h), -timeout=10 s an input.
set -euo pipefail
bin=$1
corpus=$2
shift 2
seconds=${ACAN_FUZZ_SECONDS:-30}
name=$(basename "$bin")
work=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p fuzz-artifacts
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="$PWD/fuzz-artifacts/$name-" "$@" "$work" "$corpus"
echo "$name: $(ls "$work" | wc -l) new inputs beyond the $(ls "$corpus" | wc -l) seeds, 0 crashes"
