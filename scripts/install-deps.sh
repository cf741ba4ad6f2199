#!/usr/bin/env bash
# Installs the Debian 12 packages acan needs, only those that are missing.
#   scripts/install-deps.sh          to build, test and run acan
#   scripts/install-deps.sh --tests  also what the tests use: Prometheus (promtool), chromium, tcpdump,
#                                    NumPy (the independent reference, tests/e2e/numpy_reference.py)
#   scripts/install-deps.sh --sanitize  the tests' and clang 14 with libFuzzer (scripts/test-sanitize.sh)
#   scripts/install-deps.sh --bench  also PyTorch, for the comparison scripts in bench/
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git python3
      libopenblas-dev libeigen3-dev libnats-dev nats-server libtomlplusplus-dev
      nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libssl-dev libcrypt-dev zlib1g-dev
      libgtest-dev libgmock-dev libbenchmark-dev libcpp-httplib-dev dataset-fashion-mnist
      libjs-chart.js)
case "${1:-}" in
  --tests) pkgs+=(prometheus chromium tcpdump python3-numpy) ;;  # promtool, Prometheus, a browser, captures, NumPy
  --sanitize) pkgs+=(prometheus chromium tcpdump python3-numpy clang libclang-rt-14-dev) ;;  # + the fuzz build
  --bench) pkgs+=(python3-torch) ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "acan: installing missing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
