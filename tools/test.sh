#!/usr/bin/env bash
# The test command of the README, and what CI runs: installs what is missing,
# then builds and runs the whole test suite twice, and the fuzz targets --
#   1. Release build, generator under Lua 5.4;
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build, generator under LuaJIT;
#   3. the libFuzzer targets of fuzz/ (clang), each for a short fixed time from
#      its seed corpus (ctest label "fuzz"; fuzz/README.md has the long runs);
#   4. the Python package: wheel built, installed into a fresh venv, pytest on it;
#   5. the same tests under current NumPy, scipy and scikit-image from PyPI.
# GPU tests skip themselves on machines without a device.  The exhaustive
# NVRTC sweep (ctest label "exhaustive") is left out; each pass compiles a
# seeded sample instead.  Run the sweep with
#   ctest --test-dir build-test -L exhaustive
# Each pass prints its build and test times.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-debian.sh
jobs=$(nproc 2>/dev/null || echo 2)
export NDF_CACHE_DIR="${NDF_CACHE_DIR:-$(mktemp -d)}"
# Idle OpenMP threads sleep rather than spin: ctest runs $jobs tests at once,
# each CPU-backend call opens a parallel region, and spinning waiters would
# take the cores the other tests need.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
status=0
start=$SECONDS
run() { # name, build dir, cmake args...
  local name=$1 dir=$2; shift 2
  local t0=$SECONDS t1
  echo "=== $name ==="
  if cmake -S . -B "$dir" -G Ninja "$@" >/dev/null && cmake --build "$dir" -j "$jobs"; then
    t1=$SECONDS
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" -LE exhaustive || status=1
    echo "=== $name: build $((t1 - t0)) s, tests $((SECONDS - t1)) s ==="
  else
    status=1
    echo "=== $name: build failed after $((SECONDS - t0)) s ==="
  fi
}
run "Release, Lua 5.4" build-test -DCMAKE_BUILD_TYPE=Release -DNDF_LUA="$(command -v lua5.4)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run "ASan+UBSan, LuaJIT" build-asan -DCMAKE_BUILD_TYPE=Debug -DNDF_SANITIZE=ON -DNDF_LUA="$(command -v luajit)"
run "libFuzzer targets, clang" build-fuzz -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-14 \
  -DNDF_FUZZ=ON -DNDF_BUILD_TESTS=OFF -DNDF_BUILD_BENCH=OFF -DNDF_INSTALL=OFF -DNDF_LUA="$(command -v lua5.4)"
# 4. The Python package: `pip wheel` builds it (PEP 517, scikit-build-core from PyPI running
#    the CMake build), it is installed into a fresh virtual environment (Debian's numpy, scipy
#    and pytest seen through --system-site-packages), and pytest runs python/tests against the
#    installed package, outside the source tree.  torch (PyPI has only its CUDA build, gigabytes)
#    is not installed here: its tests run where the machine has it, and test_topology_ot checks
#    the backward passes without it.
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
t0=$SECONDS
echo "=== Python package ==="
rm -rf build-python
if "$py" -m venv --system-site-packages build-python/venv &&
   CMAKE_BUILD_PARALLEL_LEVEL=$jobs build-python/venv/bin/pip wheel -q --no-deps -w build-python/dist . &&
   build-python/venv/bin/pip install -q --no-deps build-python/dist/ndforge-*.whl; then
  # dask and distributed for python/tests/test_dask.py (ndforge.dask); without them (offline) those tests skip
  # (one requirement: the distributed extra pins distributed to the same release as dask)
  build-python/venv/bin/pip install -q "dask[array,distributed]" || echo "dask not installed: test_dask skips"
  t1=$SECONDS
  # where torch is installed, the scipy comparisons run on torch CPU tensors too (python/tests/arrays.py)
  arrays=numpy
  build-python/venv/bin/python -c "import torch" 2>/dev/null && arrays=numpy,torch-cpu
  (cd build-python && NDFORGE_EXPECT_INSTALLED=1 NDFORGE_TEST_ARRAYS=$arrays \
     venv/bin/python -m pytest -q -p no:cacheprovider ../python/tests) || status=1
  echo "=== Python package: build $((t1 - t0)) s, tests $((SECONDS - t1)) s ==="
else
  status=1
  echo "=== Python package: build failed after $((SECONDS - t0)) s ==="
fi
# 5. The same tests against current NumPy 2 / scipy / scikit-image from PyPI (ADR 0033: the semantics
#    are checked under both sets), in a venv of their own with the wheel of pass 4; offline, it is skipped.
t0=$SECONDS
echo "=== Python package, current NumPy/scipy/scikit-image ==="
if [ -d build-python/dist ] && "$py" -m venv build-python/venv2 &&
   build-python/venv2/bin/pip install -q numpy scipy scikit-image pytest nibabel pydicom; then
  if build-python/venv2/bin/pip install -q --no-deps build-python/dist/ndforge-*.whl; then
    t1=$SECONDS
    build-python/venv2/bin/python -c "import numpy, scipy, skimage; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'scikit-image', skimage.__version__)"
    (cd build-python && NDFORGE_EXPECT_INSTALLED=1 venv2/bin/python -m pytest -q -p no:cacheprovider ../python/tests) || status=1
    echo "=== Python package, current NumPy/scipy/scikit-image: install $((t1 - t0)) s, tests $((SECONDS - t1)) s ==="
  else
    status=1
  fi
else
  echo "=== Python package, current NumPy/scipy/scikit-image: skipped (no wheel, or PyPI not reachable) ==="
fi
echo "=== all passes: $((SECONDS - start)) s ==="
exit $status
