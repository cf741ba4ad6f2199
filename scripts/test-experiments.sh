#!/usr/bin/env bash
# The design note's experiments as tests (ctest label "experiment"): feasibility,
# adaptivity --quick, robustness --quick and robustness --quick --processes 3, one at a time, each
# failing when its command exits non-zero or one of its claims (experiment.json) does not hold.
# Then the memory budgets' tests (label memory: a layer four times any handler's budget, across
# processes, every process's peak RSS read from /proc; and budgets that differ over nats://), one
# at a time. Installs missing Debian packages and builds first (no-ops after scripts/test.sh).
# About 5 minutes on 2 cores (4m40s at c49311c); .ci/run runs it after the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/run-ctest.sh

phase "build (Release)"
scripts/install-deps.sh --tests
scripts/build.sh

phase "the experiments and their claims (label experiment, one at a time)"
run_ctest build/ctest-experiments.log --test-dir build --no-tests=error -L experiment \
  --output-on-failure -j1 --timeout 900
phase "memory budgets measured from outside (label memory, alone)"
run_ctest build/ctest-memory.log --test-dir build --no-tests=error -L memory \
  --output-on-failure -j1 --timeout 900
phase "every experiment's claims hold, and every memory budget"
