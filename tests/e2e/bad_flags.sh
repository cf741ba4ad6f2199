#!/usr/bin/env bash
# End to end through the acan command: a flag with a bad value exits 2 with one line that names
# the flag and what it must be; --help exits 0.
# Usage: bad_flags.sh ACAN_BINARY
set -euo pipefail
acan=${1:?usage: $0 ACAN_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
job="$here/../../examples/feasibility.toml"
expect_bad() {
  local want=$1
  shift
  local err rc=0
  err=$("$acan" "$@" 2>&1 >/dev/null) || rc=$?
  [[ $rc -eq 2 ]] || { echo "FAIL: '$*' exited $rc, not 2"; exit 1; }
  grep -qF -- "$want" <<<"$err" || { echo "FAIL: '$*' said: $err (want: $want)"; exit 1; }
  echo "ok: $* -> $(head -n 1 <<<"$err")"
}
expect_bad "--handlers: must be a whole number >= 1, not '0'" train "$job" --handlers 0
expect_bad "--window: must be a whole number >= 1, not 'two'" train "$job" --window two
expect_bad "--tasks: must be a whole number >= 1, not '-5'" demo --tasks -5
expect_bad "File does not exist: /nonexistent.toml" train /nonexistent.toml
"$acan" train --help >/dev/null
echo "ok: train --help exits 0"
