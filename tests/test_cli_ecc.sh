#!/usr/bin/env bash
# test_cli_ecc.sh -- end-to-end tests of `ndforge ecc`.
#
#   tests/test_cli_ecc.sh path/to/ndforge SCRATCH_DIR
#
# Runs `ndforge ecc` on .npy inputs made with NumPy (2-D/3-D, every input
# dtype, batches, both constructions, evenly spaced thresholds over [min, max]
# or a range, --values) and compares the curve with a NumPy brute force that
# builds every cell of the cubical complex (and, when scikit-image is
# installed, with euler_number of {f <= t}).  Bad command lines exit 2, failed
# runs 1, with one "ndforge: ..." line and no output.  Exits 77 (skipped)
# without a python3 that has numpy.
set -u
. "$(dirname "$0")/cli_common.sh"
cli_setup ecc "numpy" "$@"

cat > helper.py <<'PY'
import itertools, sys
import numpy as np

def cells(f, construction):
    """(value array, dimension) for every family of cells of the complex."""
    d = f.ndim
    f = f.astype(np.float64)
    out = []
    for S in itertools.product((0, 1), repeat=d):
        if construction == 'V':   # S[i] = 1: the cell spans axis i; value = max of its vertices
            a = f
            for i in range(d):
                if S[i]:
                    a = np.maximum(a.take(range(0, a.shape[i] - 1), i), a.take(range(1, a.shape[i]), i))
            out.append((a, sum(S)))
        else:                     # S[i] = 1: the face is on a boundary across axis i; value = min of its top cells
            a = np.pad(f, 1, constant_values=np.inf)
            for i in range(d):
                if S[i]:
                    a = np.minimum(a.take(range(0, a.shape[i] - 1), i), a.take(range(1, a.shape[i]), i))
                else:
                    a = a.take(range(1, a.shape[i] - 1), i)
            out.append((a, d - sum(S)))
    return out

def chi(f, construction, t):
    fam = cells(f, construction)
    return np.array([sum(int(np.count_nonzero(a <= tk)) * (-1) ** k for a, k in fam) for tk in t], np.int64)

def main():
    cmd = sys.argv[1]
    if cmd == 'make':
        rng = np.random.default_rng(11)
        np.save('f2.npy', rng.integers(0, 6, (23, 31)).astype(np.float32))
        np.save('f3.npy', rng.integers(0, 4, (9, 10, 11)).astype(np.uint8))
        np.save('u16.npy', (rng.integers(0, 5, (2, 12, 13)) * 1000).astype(np.uint16))
        np.save('f64b.npy', rng.standard_normal((2, 3, 6, 7, 5)).round(1))
        np.save('vals.npy', np.array([0.5, -1, 3, 2, 2, 10], np.float64))
        x = rng.standard_normal((8, 8)); x[3, 4] = np.nan
        np.save('nan.npy', x)
        return
    # check INPUT OUT CONSTRUCTION BATCH THRESHOLDS.npy
    inp, outp, cons, nb, thp = sys.argv[2:7]
    f, got, t = np.load(inp), np.load(outp), np.load(thp)
    nb = int(nb)
    if got.dtype != np.int64 or got.shape != f.shape[:nb] + t.shape:
        sys.exit('output %s %s, expected int64 %s' % (got.dtype, got.shape, f.shape[:nb] + t.shape))
    for b in np.ndindex(*f.shape[:nb]):
        want = chi(f[b], cons, t)
        if not np.array_equal(got[b], want):
            sys.exit('image %s: %s, brute force %s' % (b, got[b], want))
        try:
            from skimage.measure import euler_number
        except ImportError:
            continue
        conn = 1 if cons == 'V' else f[b].ndim
        sk = np.array([euler_number(f[b] <= tk, connectivity=conn) for tk in t])
        if not np.array_equal(got[b], sk):
            sys.exit('image %s: %s, skimage %s' % (b, got[b], sk))
    if len(sys.argv) > 7:   # expected thresholds: lo hi T (formula, last = hi)
        lo, hi, T = float(sys.argv[7]), float(sys.argv[8]), int(sys.argv[9])
        w = np.array([lo + (hi - lo) * k / (T - 1) for k in range(T)])
        w[-1] = hi
        if not np.array_equal(t, w):
            sys.exit('thresholds %s, expected %s' % (t, w))
main()
PY
"$py" helper.py make || { echo "FAIL: cannot make inputs"; exit 1; }

# ok DESC INPUT CONSTRUCTION BATCH "EXPECTED lo hi T"|- CLI-OPTIONS...
ok() {
  local desc=$1 in=$2 cons=$3 nb=$4 exp=$5
  shift 5
  rm -f out.npy th.npy
  if ! "$cli" ecc "$in" out.npy --construction "$cons" --batch-dims "$nb" --thresholds-out th.npy "$@" \
      > last.out 2> last.err; then
    fail "$desc: exit $? ($(head -c 300 last.err))"
    return
  fi
  local e=()
  [ "$exp" = - ] || read -r -a e <<< "$exp"
  if "$py" helper.py check "$in" out.npy "$cons" "$nb" th.npy "${e[@]}" 2> cmp.err; then npass=$((npass + 1)); else
    fail "$desc: $(tail -n 1 cmp.err)"
  fi
}
# bad DESC EXIT EXPECTED-SUBSTRING CLI-ARGS...: that exit status, one ndforge: line, no output
bad() {
  local desc=$1 want_rc=$2 want=$3
  shift 3
  rm -f out_bad.npy
  "$cli" ecc "$@" > last.out 2> last.err
  local rc=$?
  if [ $rc -ne "$want_rc" ]; then fail "$desc: exit $rc, want $want_rc ($(head -c 300 last.err))"; return; fi
  if ! grep -q -- "$want" last.err; then fail "$desc: stderr lacks '$want': $(head -c 300 last.err)"; return; fi
  if [ "$(grep -c '^ndforge: ' last.err)" -ne 1 ]; then fail "$desc: not one ndforge: line"; return; fi
  if [ -e out_bad.npy ]; then fail "$desc: wrote an output"; return; fi
  npass=$((npass + 1))
}

ok "2-D float32 V, [min, max]" f2.npy V 0 "0 5 17" --thresholds 17
ok "2-D float32 T, [min, max]" f2.npy T 0 "0 5 9" --thresholds 9
ok "3-D uint8 V, default 256 thresholds" f3.npy V 0 "0 3 256"
ok "3-D uint8 T, range" f3.npy T 0 "-1 2.5 12" --range -1,2.5 --thresholds 12
ok "uint16 batch V" u16.npy V 1 "0 4000 5" --thresholds 5
ok "uint16 batch T, --values" u16.npy t 1 - --values vals.npy
ok "float64 two batch axes 3-D T" f64b.npy T 2 - --values vals.npy
ok "float64 two batch axes 3-D V, --device cpu" f64b.npy V 2 - --values vals.npy --device cpu

bad "NaN input" 1 "NaN" nan.npy out_bad.npy
bad "construction name" 2 "--construction" f2.npy out_bad.npy --construction X
bad "values with thresholds" 2 "--values" f2.npy out_bad.npy --values vals.npy --thresholds 4
bad "one threshold" 2 "--thresholds" f2.npy out_bad.npy --thresholds 1
bad "range order" 2 "--range" f2.npy out_bad.npy --range 3,1
bad "range syntax" 2 "--range" f2.npy out_bad.npy --range 3
bad "output type" 2 ".npy" f2.npy out_bad.nii.gz
bad "1 spatial axis" 1 "batch_dims" f2.npy out_bad.npy --batch-dims 1
bad "unknown option" 2 "--size" f2.npy out_bad.npy --size 3
bad "missing output" 2 "OUT.npy" f2.npy
# --device cuda: with a GPU the same checks; without one the context's message (exit 1)
if "$cli" info 2> /dev/null | grep -q '^device 0:'; then
  ok "2-D float32 T, --device cuda" f2.npy T 0 "0 5 9" --thresholds 9 --device cuda
  ok "3-D uint8 V, --device cuda" f3.npy V 0 "0 3 256" --device cuda
  ok "float64 two batch axes 3-D V, --device cuda" f64b.npy V 2 - --values vals.npy --device cuda
  bad "NaN input, --device cuda" 1 "NaN" nan.npy out_bad.npy --device cuda
else
  bad "--device cuda without a GPU" 1 "" f2.npy out_bad.npy --device cuda
fi
if "$cli" ecc --help | grep -q -- "--construction"; then npass=$((npass + 1)); else fail "ecc --help"; fi

cli_summary
