#!/usr/bin/env bash
# Configures and builds acan (Release, Ninja) into build/ — or $ACAN_BUILD_DIR — for this machine's
# CPU (-DACAN_NATIVE=ON, which a plain cmake configure leaves off so that an installed library runs
# on any x86-64; pass -DACAN_NATIVE=OFF to override).
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/install-deps.sh"
dir=${ACAN_BUILD_DIR:-build}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DACAN_NATIVE=ON "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
