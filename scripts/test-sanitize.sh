#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer, and each libFuzzer
# target for ACAN_FUZZ_SECONDS (30): one clang build (build-fuzz/, -DACAN_FUZZ=ON, which
# instruments everything for the fuzzers and makes the tests of the build the ASan+UBSan suite).
# CI runs it after scripts/test.sh (.ci/run). Set ACAN_TEST_LABELS (a ctest label regex, default
# quick|concurrency|chaos|fuzz) to run another subset; tests also labelled long (the process-level
# chaos runs e2e.robustness_processes and e2e.pause, 4-9 minutes each under ASan, run by
# scripts/test.sh in Release) are left out. Installs clang when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
labels=${ACAN_TEST_LABELS:-quick|concurrency|chaos|fuzz}
source scripts/run-ctest.sh

phase "build (clang, ASan + UBSan, libFuzzer targets)"
scripts/install-deps.sh --sanitize
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE=-O1 -DACAN_FUZZ=ON -DACAN_BUILD_BENCH=OFF -DACAN_NATIVE=OFF \
  -DACAN_UNITY_BUILD=ON >/dev/null
cmake --build build-fuzz -j"$jobs"

phase "tests under ASan and UBSan (labels: $labels)"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  run_ctest build-fuzz/ctest.log --test-dir build-fuzz --no-tests=error -L "$labels" -LE long \
  --output-on-failure -j"$jobs" --timeout 600
phase "the suite passed under ASan and UBSan"
