#!/usr/bin/env bash
# The README's test command: installs missing Debian packages, builds, runs the quick suite,
# the concurrency, runtime, NATS space and public API tests under ThreadSanitizer, and the find_package
# consumer project (the library, the installed conformance suite, examples/library).
# Set ACAN_TEST_LABELS (a ctest label regex) to run another subset, e.g. "quick|concurrency|chaos|slow".
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=$(nproc)
labels=${ACAN_TEST_LABELS:-quick|concurrency|chaos}
source scripts/run-ctest.sh

phase "build (Release)"
scripts/install-deps.sh --tests
scripts/build.sh

phase "tests (labels: $labels)"
run_ctest build/ctest.log --test-dir build --no-tests=error -L "$labels" --output-on-failure \
  -j"$jobs" --timeout 300

phase "concurrency, runtime and chaos tests under ThreadSanitizer"
# At -O1 (ThreadSanitizer instruments the accesses the compiled code makes at any level): about a
# third less compiling than -O3, in a suite whose budget is 20 minutes on 2 cores.
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DACAN_SANITIZE=thread -DACAN_BUILD_BENCH=OFF -DACAN_NATIVE=OFF >/dev/null
cmake --build build-tsan -j"$jobs" --target space_test space_stress_test nats_space_test \
  nats_space_stress_test runtime_test chaos_test api_test
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  run_ctest build-tsan/ctest.log --test-dir build-tsan --no-tests=error --output-on-failure \
  -j"$jobs" --timeout 120 \
  -R '^((Mem|MemSpin|MemNamed|Census|Nats|NatsFile)[.]|MemSpaceTest|NatsSpaceTest|NatsSpaceStressTest|CensusSpaceTest|FaultSpaceTest|MemSpaceStressTest|RuntimeTest|DeadlineTest|ControllerTest|ChaosTest|CrashPointTest|EveryClass/FaultMatrixTest|ApiTest|Strategies/(RuntimeStrategyTest|ChaosTest|FaultSweepTest))'

phase "install and find_package(acan) from a consumer project"
rm -rf build-consumer "$root/build/stage"
cmake --install build --prefix "$root/build/stage" >/dev/null
cmake -S tests/consumer -B build-consumer -G Ninja -DCMAKE_PREFIX_PATH="$root/build/stage" >/dev/null
cmake --build build-consumer >/dev/null
export LD_LIBRARY_PATH="$root/build/stage/lib"
./build-consumer/consumer examples/feasibility.toml
./build-consumer/conformance --gtest_brief=1
./build-consumer/examples/train_job examples/feasibility.toml "$root/build-consumer/out"
./build-consumer/examples/roles examples/feasibility.toml 3
unset LD_LIBRARY_PATH
phase "all tests passed"
