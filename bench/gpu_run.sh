#!/usr/bin/env bash
# gpu_run.sh -- the one command for the GPU machine: build, test, sanitize and
# benchmark ndforge, leaving logs and JSON under $OUT and the tables of
# bench/report.py last ($OUT/tables.md).
#
# Usage, from the repository root, after `source .gpu/env.sh`:
#   bench/gpu_run.sh [--quick] [--sanitize-only]
#     --quick          no compute-sanitizer run, and ndf_bench checks only
#                      inputs up to 128 MB against the CPU backend
#     --sanitize-only  build, then only compute-sanitizer on the GPU tests
# Environment:
#   OUT                   where logs and results go (default build-gpu/out)
#   NDF_RUN_BUDGET_S      seconds the whole run may take (default 480); a step
#                         gets what is left, and is skipped when too little is
#   NDF_SANITIZE_TOOLS    compute-sanitizer tools (default "memcheck"; e.g.
#                         "memcheck racecheck initcheck"); they run last
#   NDF_SANITIZE_CASES    random cases of each tests/test_gpu_* under the sanitizer
#                         (NDF_TEST_CASES; default 50, the plain ctest run does 200)
#   NDF_SANITIZE_TESTS    which GPU tests run under the sanitizer (default: every
#                         built tests/test_gpu_*; e.g. "test_gpu_rank")
#                         (every test program also honours NDF_TEST_FILTER, a cmocka
#                         name pattern, e.g. NDF_TEST_FILTER=test_gpu_line_doubling)
#   NDF_CTEST_ARGS        extra arguments of ctest (e.g. "-L gpu": only the GPU tests)
#   NDF_SANITIZE_WARM     1: the sanitizer runs reuse one kernel cache filled by the
#                         ctest step (faster; default 0: a fresh cache per run, so
#                         the sanitizer also sees the compile path)
#   NDF_BENCH_ARGS        extra arguments of ndf_bench (e.g. "--cpu" or "--only median")
#   NDF_PEERS             which bench/peers_*.py run (default: all; e.g. "rank grey")
#   NDF_PEERS_ARGS        extra arguments of every peers script (e.g. "--only median")
# Each step's failure is reported and the next steps still run; the exit
# status is 1 when any step failed or was skipped for time, else 0.
set -u -o pipefail

quick=0
sanitize_only=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --sanitize-only) sanitize_only=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gpu_run.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
OUT=${OUT:-$root/build-gpu/out}
mkdir -p "$OUT"
# Results of an earlier run must not reach this run's table.
rm -f "$OUT"/{gpu.txt,commit.txt,configure.log,build.log,ctest.log,bench.json,bench.log,peers.json,bandwidth.json,tables.md} \
      "$OUT"/memcheck*.log "$OUT"/racecheck*.log "$OUT"/initcheck*.log "$OUT"/peers_*.json "$OUT"/peers_*.log
build="build-gpu"
budget=${NDF_RUN_BUDGET_S:-480}
t_start=$SECONDS
failed=()
summary=()

# Sets up the environment when the caller has not (env.sh is idempotent).
if ! command -v cmocka-config >/dev/null 2>&1 && [ -f .gpu/env.sh ] && [[ ":$PATH:" != *":/opt/ndf-deps/usr/bin:"* ]]; then
  # shellcheck disable=SC1091
  source .gpu/env.sh
fi

left() { echo $(( budget - (SECONDS - t_start) )); }

# step NAME MAX_SECONDS LOG COMMAND... : runs COMMAND under timeout, with its
# output on the terminal and in LOG (when LOG is not "-"), and records the outcome.
step() {
  local name=$1 max=$2 log=$3; shift 3
  local l; l=$(left)
  local t=$(( max < l ? max : l ))
  if (( t < 10 )); then
    echo "=== $name: SKIPPED (out of time: ${l}s left of ${budget}s)"
    failed+=("$name(no time)"); summary+=("$name: skipped, no time")
    return 1
  fi
  echo "=== $name (limit ${t}s): $*"
  local t0=$SECONDS rc
  if [ "$log" = - ]; then
    timeout --kill-after=10 "$t" "$@"
  else
    timeout --kill-after=10 "$t" "$@" 2>&1 | tee "$log"
  fi
  rc=$?
  local dt=$(( SECONDS - t0 ))
  if (( rc == 0 )); then
    echo "=== $name: ok (${dt}s)"; summary+=("$name: ok (${dt}s)")
  else
    local why="exit $rc"
    (( rc == 124 || rc == 137 )) && why="timed out after ${t}s"
    (( rc == 77 )) && why="exit 77: skipped, no usable GPU"
    echo "=== $name: FAILED ($why, ${dt}s)"; failed+=("$name"); summary+=("$name: FAILED ($why, ${dt}s)")
  fi
  return $rc
}

# json_to JSON LOG COMMAND...: COMMAND's stdout to JSON, its stderr to the terminal and LOG.
json_to() {
  local json=$1 log=$2; shift 2
  "$@" > "$json" 2> >(tee "$log" >&2)
}
export -f json_to

echo "gpu_run.sh: $(date -u +%FT%TZ) quick=$quick sanitize_only=$sanitize_only OUT=$OUT budget=${budget}s"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv 2>&1 | tee "$OUT/gpu.txt" || true
git rev-parse HEAD 2>/dev/null > "$OUT/commit.txt"
git status --short 2>/dev/null >> "$OUT/commit.txt"

built=0
# One kernel cache for the tests of this run (the sanitizer may reuse it, see NDF_SANITIZE_WARM).
run_cache=$(mktemp -d "${TMPDIR:-/tmp}/ndf-run-cache-XXXXXX")
trap 'rm -rf "$run_cache"' EXIT
# Tests and bench are forced on: an earlier configure of build-gpu may have turned them off.
if step configure 120 "$OUT/configure.log" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DNDF_BUILD_TESTS=ON -DNDF_BUILD_BENCH=ON; then
  step build 240 "$OUT/build.log" cmake --build "$build" && built=1
fi
(( built )) || echo "=== nothing to test or time: the build failed"

if (( built && ! sanitize_only )); then
  # shellcheck disable=SC2206
  ctest_args=(${NDF_CTEST_ARGS:-})
  step ctest 240 "$OUT/ctest.log" env NDF_CACHE_DIR="$run_cache" ctest --test-dir "$build" --output-on-failure \
    --timeout 200 "${ctest_args[@]}"

  bench_args=(--human)
  (( quick )) && bench_args+=(--check-max-mb 128)
  # shellcheck disable=SC2206
  bench_args+=(${NDF_BENCH_ARGS:-})
  # ndf_bench makes its cache dirs under TMPDIR; a timeout kill cannot clean them up, this can.
  bench_tmp=$(mktemp -d "${TMPDIR:-/tmp}/ndf-bench-run-XXXXXX")
  step ndf_bench 240 - env TMPDIR="$bench_tmp" bash -c 'json_to "$@"' _ \
    "$OUT/bench.json" "$OUT/bench.log" "$build/bench/ndf_bench" "${bench_args[@]}"
  rm -rf "$bench_tmp"
fi

if (( ! sanitize_only )); then
  # shellcheck disable=SC2206
  peers_args=(--human ${NDF_PEERS_ARGS:-})
  : > "$OUT/peers.json"
  for script in bench/peers_*.py; do
    fam=${script#bench/peers_}; fam=${fam%.py}
    if [ -n "${NDF_PEERS:-}" ] && [[ " $NDF_PEERS " != *" $fam "* ]]; then continue; fi
    step "peers_$fam" 150 - bash -c 'json_to "$@"' _ "$OUT/peers_$fam.json" "$OUT/peers_$fam.log" \
      python3 "$script" "${peers_args[@]}"
    cat "$OUT/peers_$fam.json" >> "$OUT/peers.json" 2>/dev/null
  done

  # The card's copy bandwidth, for the memory floor of the tables: a 1 GiB
  # device-to-device copy (read + write) through torch, the median of 20 timed by
  # CUDA events.  Without torch the tables take the card's known bandwidth.
  step bandwidth 60 - python3 - "$OUT/bandwidth.json" <<'PYEOF'
import json, statistics, sys
try:
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device")
except Exception as e:
    print("bandwidth: not measured (%s)" % e)
    sys.exit(0)
n = 1 << 30
src = torch.ones(n, dtype=torch.uint8, device="cuda")
dst = torch.empty_like(src)
for _ in range(3):
    dst.copy_(src)
times = []
for _ in range(20):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    dst.copy_(src)
    b.record()
    b.synchronize()
    times.append(a.elapsed_time(b))
rec = {"device": torch.cuda.get_device_name(0), "bytes_per_s": 2 * n / (statistics.median(times) * 1e-3),
       "method": "torch copy of 1 GiB on the device, read + write, median of 20 (CUDA events)"}
with open(sys.argv[1], "w") as f:
    json.dump(rec, f)
print("bandwidth: %s %.2f TB/s" % (rec["device"], rec["bytes_per_s"] / 1e12))
PYEOF
fi

# The sanitizer runs last: it is the slowest step and the likeliest to run out of
# time, and what it finds does not change the numbers above.
if (( built && (sanitize_only || ! quick) )); then
  gpu_tests=()
  for t in ${NDF_SANITIZE_TESTS:-$(cd "$build/tests" 2>/dev/null && ls test_gpu_* 2>/dev/null)}; do
    [ -x "$build/tests/$t" ] && gpu_tests+=("$t")
  done
  if (( ${#gpu_tests[@]} )); then
    for tool in ${NDF_SANITIZE_TOOLS:-memcheck}; do
      extra=()
      [ "$tool" = memcheck ] && extra=(--leak-check full)
      for t in "${gpu_tests[@]}"; do
        # A fresh cache dir: the run compiles under the sanitizer, as a first run does.
        san_cache=$run_cache
        [ "${NDF_SANITIZE_WARM:-0}" = 1 ] || san_cache=$(mktemp -d "${TMPDIR:-/tmp}/ndf-san-XXXXXX")
        step "$tool:$t" 180 "$OUT/$tool-$t.log" env NDF_CACHE_DIR="$san_cache" \
          NDF_TEST_CASES="${NDF_SANITIZE_CASES:-50}" \
          compute-sanitizer --tool "$tool" --error-exitcode 1 "${extra[@]}" "$build/tests/$t"
        [ "$san_cache" = "$run_cache" ] || rm -rf "$san_cache"
      done
    done
  else
    echo "=== sanitizer: FAILED (no tests/test_gpu_* was built)"; failed+=("sanitizer"); summary+=("sanitizer: FAILED (no GPU tests)")
  fi
fi

# The tables: per op family, ndforge next to the peers of this run (warm medians, ms)
# and the memory floor, in markdown, on the terminal and in $OUT/tables.md.
if (( ! sanitize_only )); then
  echo
  python3 bench/report.py "$OUT" | tee "$OUT/tables.md" || { failed+=("tables"); summary+=("tables: FAILED"); }
fi

echo
echo "=== summary ($(( SECONDS - t_start ))s; logs in $OUT)"
for line in "${summary[@]}"; do echo "  $line"; done
if (( ${#failed[@]} )); then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all steps ok"
