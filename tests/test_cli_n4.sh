#!/usr/bin/env bash
# test_cli_n4.sh -- end-to-end tests of `ndforge run n4` (N4 bias-field
# correction).
#
#   tests/test_cli_n4.sh path/to/ndforge SCRATCH_DIR
#
# A float32 volume (two tissue classes times a smooth bias) and its mask: the
# output and the log field (--bias-field) are written, output = input /
# exp(log field), the field follows the bias (correlation above 0.9), a
# mask of any dtype and --mask-label, --output-dtype float64, NIfTI in and out
# with the header kept; bad command lines exit 2 and failures exit 1, both
# with one message and no output file.  Exits 77 without numpy.
set -u
. "$(dirname "$0")/cli_common.sh"
cli_setup n4 "numpy" "$@"

cat > n4.py <<'PY'
import subprocess, sys
import numpy as np
cli = sys.argv[1]
rng = np.random.default_rng(11)
sh = (24, 28, 20)
g = np.meshgrid(*[np.linspace(-1, 1, n) for n in sh], indexing='ij')
logb = 0.3 * g[0] - 0.15 * g[1] * g[2]
tissue = np.where(rng.random(sh) < 0.5, 60.0, 150.0) * (1 + 0.05 * rng.normal(size=sh))
x = (tissue * np.exp(logb)).astype(np.float32); np.save('x.npy', x)
inside = sum(a * a for a in g) < 1.6
np.save('m.npy', inside.astype(np.uint8))
np.save('m3.npy', np.where(inside, 3, 1).astype(np.int16))   # label 3 inside, 1 outside
ok = True
def run(*args):
    r = subprocess.run([cli, 'run', 'n4'] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        print('FAIL: run n4 %s exited %d: %s' % (' '.join(args), r.returncode, r.stderr.strip()))
    return r.returncode == 0
def corr(a, b):
    a = a[inside] - a[inside].mean(); b = b[inside] - b[inside].mean()
    return float((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))
if run('x.npy', 'o.npy', '--mask', 'm.npy', '--shrink-factor', '2', '--iterations', '30,30', '--bias-field', 'lb.npy',
       '--device', 'cpu'):
    o, lb = np.load('o.npy'), np.load('lb.npy')
    if o.dtype != np.float32 or lb.dtype != np.float32 or o.shape != sh:
        print('FAIL: dtypes %s %s, shape %s' % (o.dtype, lb.dtype, o.shape)); ok = False
    elif not np.allclose(o, x / np.exp(lb.astype(np.float64)), rtol=1e-5):
        print('FAIL: output != input / exp(log field)'); ok = False
    elif corr(lb.astype(np.float64), logb) < 0.9:
        print('FAIL: the log field correlates %.3f with the bias' % corr(lb, logb)); ok = False
    # the same fit from a label mask
    if run('x.npy', 'o3.npy', '--mask', 'm3.npy', '--mask-label', '3', '--shrink-factor', '2', '--iterations', '30,30',
           '--device', 'cpu') and not np.array_equal(np.load('o3.npy'), o):
        print('FAIL: --mask-label 3 on a label mask differs from the 0/1 mask'); ok = False
else:
    ok = False
if run('x.npy', 'o64.npy', '--iterations', '5', '--output-dtype', 'float64', '--control-points', '5,4,6',
       '--spline-order', '2', '--bins', '64', '--fwhm', '0.2', '--wiener-noise', '0.05',
       '--convergence-threshold', '0.0001', '--device', 'cpu'):
    if np.load('o64.npy').dtype != np.float64:
        print('FAIL: --output-dtype float64'); ok = False
else:
    ok = False
sys.exit(0 if ok else 1)
PY
if "$py" n4.py "$cli"; then npass=$((npass + 1)); else fail "run n4"; fi

# NIfTI in and out: the header (pixdim) is kept.
"$cli" run grey_erosion --size 1 --device cpu x.npy x.nii.gz >/dev/null 2>&1 &&
  "$cli" run n4 x.nii.gz o.nii.gz --iterations 3 --bias-field lb.nii.gz --device cpu 2>err.txt &&
  [ -s o.nii.gz ] && [ -s lb.nii.gz ] && npass=$((npass + 1)) || fail "NIfTI in and out: $(cat err.txt)"

# Bad command lines (2) and failures (1): one message, no output file.
expect_exit() {
  local want=$1
  shift
  rm -f bad.npy
  "$cli" run "$@" 2>err.txt
  local rc=$?
  if [ "$rc" -ne "$want" ] || [ -e bad.npy ] || [ "$(wc -l <err.txt)" -ne 1 ]; then
    fail "ndforge run $* exited $rc (want $want), output $( [ -e bad.npy ] && echo written || echo absent): $(cat err.txt)"
  else
    npass=$((npass + 1))
  fi
}
expect_exit 2 n4 x.npy
expect_exit 2 n4 x.npy bad.npy --shrink-factor 0
expect_exit 2 n4 x.npy bad.npy --mask-label 256
expect_exit 2 n4 x.npy bad.npy --fwhm-typo 1
expect_exit 2 n4 x.npy bad.npy --output-dtype int16
expect_exit 1 n4 x.npy bad.npy --bins 1
expect_exit 1 n4 x.npy bad.npy --spline-order 7
expect_exit 1 n4 x.npy bad.npy --mask m.npy --mask-label 9
expect_exit 1 n4 x.npy bad.npy --mask missing.npy
cli_summary
