#!/bin/sh
# ecc_strip2_rt.sh BUILD_DIR [SEED] [CASES] -- runtime-level host check of the 2-D warp-strip kernels:
# runtime/ecc_cuda.c (BUILD_DIR/libndforge_internal.a) plans and launches ndf_ecc_strip2, whose launch
# (parameter bytes, grid) runs on the host-emulated kernel (ecc_strip2_emu.cpp, EMU_RT; ASan on) for
# float32 / uint8 / uint16, V and T: curves bit for bit against the CPU backend, NaN / inf errors and
# the untouched output, the mapped header's sequence word (no stream sync) or, with NDF_ECC_MAPHDR=0,
# the copy; the context's workspace, or (NDF_ECC2_WS=0) exactly sized per-call scratch; EMU_DEFER=1:
# deferred data checks (ndf_ctx_options.deferred_errors).
# EMU_NSP=2: ndf_ecc_strip2t (the default for T <= 320), also NDF_ECC_2D=strip2.  EMU_NSP=3: the same for the 3-D kernel (ndf_ecc_strip3, and ndf_ecc_strip3n with NDF_ECC3_W=8; uint8 /
# uint16 with NDF_ECC_3D=strip3).
set -eu
B=${1:?build dir}; SEED=${2:-1}; CASES=${3:-8}
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
python3 "$here/ecc_strip2_emu_splice.py" "$root" "$W/kern.inc"
fail=0
for cfg in "float NDF_FLOAT32" "uchar NDF_UINT8" "ushort NDF_UINT16"; do
  set -- $cfg
  [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ] || continue
  dt=$2
  case "$1" in uchar) tin="unsigned char";; ushort) tin="unsigned short";; *) tin=$1;; esac
  for cons in 0 1; do
    nsp=${EMU_NSP:-2}
    cc -std=c11 -O1 -w -c -I"$root/include" -I"$root/runtime" -I"$B/generated" -DEMU_DT=$dt \
      -DEMU_CONS=$cons -DEMU_NSP=$nsp "$here/ecc_strip2_rt_stubs.c" -o "$W/s.o"
    g++ -std=c++20 -O1 -g -w -pthread -fsanitize=address -DEMU_RT -I"$root/include" -I"$root/templates" \
      -DKERN_INC="\"$W/kern.inc\"" -DEMU_TIN="$tin" -DEMU_CONS=$cons -DEMU_NSP=$nsp \
      -c "$here/ecc_strip2_emu.cpp" -o "$W/k.o"
    g++ -fsanitize=address "$W/s.o" "$W/k.o" "$B/libndforge_internal.a" -Wl,--allow-multiple-definition -fopenmp -ldl -lm -lpthread -o "$W/emu"
    echo "== $tin CONS $cons NSP $nsp"
    x=""; [ "$nsp" = 3 ] && [ "$1" != float ] && x="NDF_ECC_3D=strip3"
    env $x "$W/emu" "$SEED" "$CASES" || fail=1
    env $x NDF_ECC2_WS=0 NDF_ECC_MAPHDR=0 "$W/emu" "$((SEED + 100))" "$CASES" || fail=1
    [ "$nsp" = 3 ] && { env $x NDF_ECC3_W=8 "$W/emu" "$((SEED + 200))" "$CASES" || fail=1; }
    # NDF_ECC2_PROF=1, a smoke test (ASan): a report line per call (its own copy and sync make this
    # harness's copy / sync counts differ, so only the report lines are counted)
    [ "$1" = float ] && [ "$cons" = 0 ] && { env $x NDF_ECC2_PROF=1 NDF_ECC_MAPHDR=0 "$W/emu" "$((SEED + 500))" 2 2>&1 | grep -c "ndf prof" || fail=1; }
    # EMU_DEFER=1: a context with deferred data checks (the float calls do not wait; reports after
    # random runs of calls name the first failing one), on the workspace and on per-call scratch
    [ "$1" = float ] && { env $x EMU_DEFER=1 "$W/emu" "$((SEED + 600))" "$((CASES * 2))" || fail=1; }
    [ "$1" = float ] && { env $x EMU_DEFER=1 NDF_ECC2_WS=0 "$W/emu" "$((SEED + 700))" "$CASES" || fail=1; }
    # NDF_ECC_PLAN=fine: the finer chunk-count search of the plans (strip_chunks_make's fine)
    [ "$1" = float ] && { env $x NDF_ECC_PLAN=fine "$W/emu" "$((SEED + 800))" "$CASES" || fail=1; }
    if [ "$nsp" = 2 ]; then # ndf_ecc_strip2 (the default: ndf_ecc_strip2t; T 510: strip2)
      env NDF_ECC_2D=strip2 "$W/emu" "$((SEED + 300))" "$CASES" || fail=1
      env NDF_ECC_2D=strip2 NDF_ECC2_MC=1 NDF_ECC2_WS=0 NDF_ECC_MAPHDR=0 "$W/emu" "$((SEED + 400))" "$CASES" || fail=1
    fi
  done
done
exit $fail
