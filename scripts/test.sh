#!/usr/bin/env bash
# The README's test command: installs missing Debian packages, builds, runs the quick suite and
# the find_package consumer project (the library, the installed conformance suite,
# examples/library). The ThreadSanitizer subset is scripts/test-tsan.sh, which CI runs next.
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
