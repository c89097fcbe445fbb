#!/usr/bin/env bash
# profile.sh -- Nsight Compute summaries of chosen ndf_bench workloads, on the
# GPU machine, after a build in build-gpu (bench/gpu_run.sh makes one).
#
# Usage: bench/profile.sh KERNEL_REGEX NDF_BENCH_ARGS...
#   e.g. bench/profile.sh ndf_grey_line --op grey_dilation --shape 2048,2048 --size 63
# Profiles the first 2 launches of kernels matching KERNEL_REGEX (after the
# warm-up ones) with the speed-of-light, occupancy, launch, warp-state and
# memory sections, clocks left as they are (--clock-control none), and writes
# the report to stdout.  Environment: NDF_PROFILE_SKIP (launches to skip,
# default 12), NDF_PROFILE_COUNT (default 2).
set -u
[ $# -ge 2 ] || { sed -n '2,12p' "$0"; exit 2; }
regex=$1; shift
exec ncu --clock-control none --target-processes application-only \
  -k "regex:$regex" -s "${NDF_PROFILE_SKIP:-12}" -c "${NDF_PROFILE_COUNT:-2}" \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
  --section MemoryWorkloadAnalysis --section SchedulerStats \
  build-gpu/bench/ndf_bench --no-check --reps 5 "$@"
