#!/usr/bin/env bash
# The test command of the README, and what CI runs: installs what is missing,
# then builds and runs the whole test suite twice --
#   1. Release build, generator under Lua 5.4;
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build, generator under LuaJIT.
# GPU tests skip themselves on machines without a device.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-debian.sh
jobs=$(nproc 2>/dev/null || echo 2)
export NDF_CACHE_DIR="${NDF_CACHE_DIR:-$(mktemp -d)}"
status=0
run() { # name, build dir, cmake args...
  local name=$1 dir=$2; shift 2
  echo "=== $name ==="
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null &&
    cmake --build "$dir" -j "$jobs" &&
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" || status=1
}
run "Release, Lua 5.4" build-test -DCMAKE_BUILD_TYPE=Release -DNDF_LUA="$(command -v lua5.4)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run "ASan+UBSan, LuaJIT" build-asan -DCMAKE_BUILD_TYPE=Debug -DNDF_SANITIZE=ON -DNDF_LUA="$(command -v luajit)"
exit $status
