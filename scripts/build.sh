#!/usr/bin/env bash
# Configures and builds acan (Release, Ninja) into build/ — or $ACAN_BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/install-deps.sh"
dir=${ACAN_BUILD_DIR:-build}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
