#!/usr/bin/env bash
# The README's run command: installs missing Debian packages (Fashion-MNIST among them), builds,
# and trains the flagship job, examples/fashion-mnist.toml, on the embedded space with 2 handlers.
# It ends by printing the test accuracy and where the artefacts are. Extra arguments go to
# `acan train` (e.g. --out DIR, --handlers N, --window W).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec build/src/cli/acan train examples/fashion-mnist.toml --out out/fashion-mnist "$@"
