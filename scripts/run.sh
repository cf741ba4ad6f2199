#!/usr/bin/env bash
# The README's run command: installs missing Debian packages, builds, and runs the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec build/src/cli/acan demo "$@"
