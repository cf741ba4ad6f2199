# Sourced by scripts/test.sh, test-tsan.sh, test-experiments.sh and test-sanitize.sh.
# phase TEXT: says how long the run has taken so far (CI has a budget; this shows where it went).
phase() { echo "== [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }
# run_ctest LOG CTEST_ARGS...: ctest, and when a test fails, its assertions and sanitizer reports
# once more at the very end, and a script test's FAIL line with what it printed after it (a
# failing test's whole log comes first; a reader of the output's tail still sees why).
run_ctest() {
  local log=$1
  shift
  if ctest "$@" --output-log "$log"; then return 0; fi
  echo "== why the tests failed (from $log)"
  grep -E -A8 ': Failure$|^FAIL[: ]|WARNING: (Thread|Address|Undefined|Leak)Sanitizer|ERROR: (Address|Leak)Sanitizer|runtime error:|==ERROR: libFuzzer' "$log" |
    grep -v '\[info\]' | head -120
  grep -E '^\s*[0-9]+ - ' "$log" | tail -20
  return 1
}
