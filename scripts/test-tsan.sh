#!/usr/bin/env bash
# The concurrency, runtime, chaos, NATS space and public API tests under ThreadSanitizer (build-tsan/),
# at -O1. CI runs it after the README's test command (.ci/run); on its own it installs missing
# Debian packages first. About 7 minutes on 2 cores (docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
source scripts/run-ctest.sh

scripts/install-deps.sh --tests
phase "concurrency, runtime and chaos tests under ThreadSanitizer"
# At -O1 (ThreadSanitizer instruments the accesses the compiled code makes at any level): about a
# third less compiling than -O3.
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DACAN_SANITIZE=thread -DACAN_BUILD_BENCH=OFF -DACAN_NATIVE=OFF -DACAN_UNITY_BUILD=ON >/dev/null
cmake --build build-tsan -j"$jobs" --target space_test space_stress_test nats_space_test \
  nats_space_stress_test runtime_test chaos_test api_test
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  run_ctest build-tsan/ctest.log --test-dir build-tsan --no-tests=error --output-on-failure \
  -j"$jobs" --timeout 120 \
  -R '^((Mem|MemSpin|MemNamed|Census|Nats|NatsFile)[.]|MemSpaceTest|NatsSpaceTest|NatsSpaceStressTest|CensusSpaceTest|FaultSpaceTest|MemSpaceStressTest|RuntimeTest|DeadlineTest|ControllerTest|ChaosTest|CrashPointTest|EveryClass/FaultMatrixTest|ApiTest|Strategies/(RuntimeStrategyTest|ChaosTest|FaultSweepTest))'

phase "the ThreadSanitizer subset passed"
