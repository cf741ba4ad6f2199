#!/usr/bin/env bash
# One of the design note's experiments as a test: runs `acan experiment NAME [ARGS]`
# and fails unless it exits 0 and its experiment.json lists its claims, each with its figure, its
# goal and the baseline it was judged against (measured apart from the run it judges), every one
# holding, and claims_hold true.
# Usage: experiment.sh ACAN_BINARY NAME [ARGS...]
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY NAME [ARGS...]}
name=${2:?usage: $0 ACAN_BINARY NAME [ARGS...]}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
set +e
"$acan" experiment "$name" "$@" --out "$work/out" > "$work/log" 2>&1
rc=$?
set -e
grep -v '^epoch ' "$work/log" || true
/usr/bin/python3 "$here/experiment_claims.py" "$work/out/experiment.json" "$rc"
