#!/usr/bin/env bash
# test_cli_metrics.sh -- end-to-end tests of `ndforge metrics`.
#
#   tests/test_cli_metrics.sh path/to/ndforge SCRATCH_DIR
#
# Makes random image pairs with NumPy, runs every metric (with --batch-dims,
# the SSIM map with --full, hausdorff with --percentile and --sampling) and
# compares the printed values with scikit-image's (relative 1e-12; the SSIM
# map bit for bit), then checks the exit statuses: 2 for a bad command line,
# 1 for a failure (PSNR of a float image outside [-1, 1]), each with one
# "ndforge: ..." line, and no map file after a failure.  Exits 77 (skipped)
# without a python3 that has numpy and scikit-image.
set -u
. "$(dirname "$0")/cli_common.sh"
cli_setup metrics "numpy, skimage" "$@"

cat > oracle.py <<'PY'
import sys
import numpy as np
from scipy.spatial import cKDTree
from skimage.metrics import (hausdorff_distance, mean_squared_error, normalized_root_mse,
                             peak_signal_noise_ratio, structural_similarity)

def make():
    rng = np.random.default_rng(5)
    a = rng.random((2, 24, 21)).astype(np.float32)
    np.save("a.npy", a)
    np.save("b.npy", (a + 0.1 * rng.standard_normal(a.shape)).astype(np.float32))
    m = rng.random((13, 11, 9)) > 0.8
    np.save("m.npy", m)
    np.save("n.npy", (m ^ (rng.random(m.shape) > 0.9)).astype(np.uint8))
    np.save("wide.npy", (a * 3).astype(np.float32))

def expect(metric, extra):
    a, b = (np.load("m.npy"), np.load("n.npy")) if metric in ("dice", "jaccard", "hausdorff") else \
           (np.load("a.npy"), np.load("b.npy"))
    batch = 1 if "--batch-dims" in extra else 0
    out = []
    for idx in np.ndindex(*a.shape[:batch]):
        x, y = a[idx], b[idx]
        if metric == "mse":
            v = mean_squared_error(x, y)
        elif metric == "nrmse":
            v = normalized_root_mse(x, y, normalization="min-max" if "min-max" in extra else "euclidean")
        elif metric == "psnr":
            v = peak_signal_noise_ratio(x, y)
        elif metric == "ssim":
            v = structural_similarity(x, y, data_range=1.0)
        elif metric in ("dice", "jaccard"):
            A, B = x != 0, y != 0
            i, s = np.count_nonzero(A & B), np.count_nonzero(A) + np.count_nonzero(B)
            v = 2 * i / s if metric == "dice" else i / (s - i)
        else:
            if "--percentile" in extra:
                q = float(extra[extra.index("--percentile") + 1])
                sp = np.array([2.0, 1.0, 0.5])
                pa, pb = np.transpose(np.nonzero(x)) * sp, np.transpose(np.nonzero(y)) * sp
                v = max(np.percentile(cKDTree(pb).query(pa)[0], q), np.percentile(cKDTree(pa).query(pb)[0], q))
            else:
                v = hausdorff_distance(x, y)
        out.append(float(v))
    return out

if sys.argv[1] == "make":
    make()
elif sys.argv[1] == "check":
    metric, got = sys.argv[2], [float(t) for t in open(sys.argv[3]).read().split()]
    want = expect(metric, sys.argv[4:])
    ok = len(got) == len(want) and all(abs(g - w) <= 1e-12 * abs(w) for g, w in zip(got, want))
    print("ok" if ok else "want %r, got %r" % (want, got))
elif sys.argv[1] == "map":
    a, b = np.load("a.npy"), np.load("b.npy")
    S = np.stack([structural_similarity(a[i], b[i], data_range=1.0, full=True)[1] for i in range(2)])
    got = np.load(sys.argv[2])
    print("ok" if got.dtype == S.dtype and np.array_equal(got, S) else "map differs (%s)" % got.dtype)
PY
"$py" oracle.py make || { echo "FAIL: could not make the inputs"; exit 1; }

check() { # check METRIC [options]: the printed values against scikit-image's
  local metric=$1
  shift
  local files="a.npy b.npy"
  case $metric in dice | jaccard | hausdorff) files="m.npy n.npy" ;; esac
  if ! "$cli" metrics "$metric" $files "$@" > out.txt 2> err.txt; then
    fail "metrics $metric $*: exit $? ($(cat err.txt))"
    return
  fi
  local r
  r=$("$py" oracle.py check "$metric" out.txt "$@")
  if [ "$r" = ok ]; then npass=$((npass + 1)); else fail "metrics $metric $*: $r"; fi
}

check mse
check mse --batch-dims 1
check nrmse --batch-dims 1 --normalization min-max
check psnr
check ssim --data-range 1 --batch-dims 1 --full S.npy
check dice
check jaccard
check hausdorff
check hausdorff --percentile 95 --sampling 2,1,0.5
r=$("$py" oracle.py map S.npy)
if [ "$r" = ok ]; then npass=$((npass + 1)); else fail "the SSIM map: $r"; fi

status() { # status WANT [args]: the exit status and one "ndforge: " line
  local want=$1
  shift
  rm -f bad.npy
  "$cli" metrics "$@" > out.txt 2> err.txt
  local rc=$?
  if [ "$rc" -ne "$want" ] || [ "$(grep -c '^ndforge: ' err.txt)" -ne 1 ] || [ -e bad.npy ]; then
    fail "metrics $*: exit $rc (want $want), stderr: $(cat err.txt)"
  else
    npass=$((npass + 1))
  fi
}
status 2 mse a.npy
status 2 psnr a.npy b.npy --data-range -1
status 2 foo a.npy b.npy
status 2 mse a.npy b.npy --full bad.npy
status 1 psnr wide.npy b.npy
status 1 ssim a.npy b.npy --win-size 4 --full bad.npy
status 1 mse a.npy m.npy
cli_summary
