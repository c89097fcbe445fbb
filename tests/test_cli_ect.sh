#!/usr/bin/env bash
# test_cli_ect.sh -- end-to-end tests of `ndforge ect`.
#
#   tests/test_cli_ect.sh path/to/ndforge SCRATCH_DIR
#
# Runs `ndforge ect` on .npy images and directions made with NumPy (2-D/3-D,
# binary and weighted, both constructions, batches, spacing, --normalize,
# thresholds over [-R, R], a range or --values) and compares with a NumPy
# brute force that builds every cell family of the complex of the shape
# {input != 0} with its height and weight.  Bad command lines exit 2, failed
# runs 1, with one "ndforge: ..." line and no output.  Exits 77 (skipped)
# without a python3 that has numpy.
set -u
. "$(dirname "$0")/cli_common.sh"
cli_setup ect "numpy" "$@"

cat > helper.py <<'PY'
import itertools, sys
import numpy as np

def coords(shape, spacing, normalize):
    half = [(n - 1) / 2.0 * s for n, s in zip(shape, spacing)]
    r2 = 0.0
    for h in half:
        r2 += h * h
    xs = []
    for n, s in zip(shape, spacing):
        x = (np.arange(n, dtype=np.float64) - (n - 1) / 2.0) * s
        if normalize and r2 > 0:
            x = x / np.sqrt(r2)
        xs.append(x)
    return xs

def heights(xs, u):
    d = len(xs)
    h = np.zeros([len(x) for x in xs])
    for i, x in enumerate(xs):
        sh = [1] * d
        sh[i] = len(x)
        h = h + x.reshape(sh) * u[i]
    return h

def families(h, w, shape_mask, cons):
    """(heights, weights, dim) per cell family of the shape's complex."""
    d = h.ndim
    h = np.where(shape_mask, h, np.inf)
    out = []
    for S in itertools.product((0, 1), repeat=d):
        if cons == 'V':   # S[i] = 1: spans axis i; height max, weight min of the vertices
            a, b = h, np.where(shape_mask, w, np.inf)
            for i in range(d):
                if S[i]:
                    lo, hi = range(0, a.shape[i] - 1), range(1, a.shape[i])
                    a = np.maximum(a.take(lo, i), a.take(hi, i))
                    b = np.minimum(b.take(lo, i), b.take(hi, i))
            out.append((a, b, sum(S)))
        else:             # S[i] = 1: on a boundary across axis i; height min, weight max of the shape's top cells
            a = np.pad(h, 1, constant_values=np.inf)
            b = np.pad(np.where(shape_mask, w, -np.inf), 1, constant_values=-np.inf)
            for i in range(d):
                if S[i]:
                    lo, hi = range(0, a.shape[i] - 1), range(1, a.shape[i])
                    a = np.minimum(a.take(lo, i), a.take(hi, i))
                    b = np.maximum(b.take(lo, i), b.take(hi, i))
                else:
                    a = a.take(range(1, a.shape[i] - 1), i)
                    b = b.take(range(1, b.shape[i] - 1), i)
            out.append((a, b, d - sum(S)))
    return out

def ect(f, u, t, cons, weighted, spacing, normalize):
    xs = coords(f.shape, spacing, normalize)
    h = heights(xs, u)
    mask = f != 0
    w = f.astype(np.float64) if weighted else np.ones(f.shape)
    fam = families(h, w, mask, cons)
    res = []
    for tk in t:
        s = 0.0
        for a, b, k in fam:
            sel = (a <= tk) & np.isfinite(a)
            s += (-1) ** k * (b[sel].sum() if weighted else np.count_nonzero(sel))
        res.append(s)
    return np.array(res), xs

def main():
    cmd = sys.argv[1]
    if cmd == 'make':
        rng = np.random.default_rng(5)
        np.save('b2.npy', (rng.random((17, 23)) < 0.6).astype(np.uint8))
        np.save('f2.npy', (rng.integers(0, 3, (12, 9)) * 0.5).astype(np.float32))
        np.save('w3.npy', rng.integers(-2, 4, (2, 7, 6, 5)).astype(np.float64))
        np.save('u3.npy', (rng.integers(0, 4, (6, 5, 7)) * 1000).astype(np.uint16))
        d2 = rng.standard_normal((5, 2)); d2[0] = [1, 0]; d2[1] = [0, -1]
        np.save('d2.npy', d2)
        np.save('d3.npy', rng.standard_normal((4, 3)).astype(np.float32))
        np.save('one3.npy', np.array([0.3, -0.5, 0.8]))
        np.save('vals.npy', np.array([0.5, -1, 3, 2, 2, 10, -30], np.float64))
        bad = d2.copy(); bad[2, 1] = np.nan
        np.save('dnan.npy', bad)
        np.save('i64.npy', np.ones((5, 5), np.int64))
        np.save('f4.npy', np.ones((2, 3, 3, 3)))
        return
    # check INPUT DIRS OUT TH CONS BATCH WEIGHTED SPACING NORMALIZE [R-check T]
    inp, dirp, outp, thp, cons, nb, weighted, spacing, normalize = sys.argv[2:11]
    cons = cons.upper()
    f, dirs, got, t = np.load(inp), np.load(dirp).astype(np.float64), np.load(outp), np.load(thp)
    dirs = dirs.reshape(-1, dirs.shape[-1])
    nb, weighted, normalize = int(nb), int(weighted), int(normalize)
    nsp = f.ndim - nb
    spacing = [1.0] * nsp if spacing == '-' else [float(s) for s in spacing.split(',')]
    want_shape = f.shape[:nb] + (dirs.shape[0],) + t.shape
    want_dt = np.float64 if weighted else np.int64
    if got.dtype != want_dt or got.shape != want_shape:
        sys.exit('output %s %s, expected %s %s' % (got.dtype, got.shape, np.dtype(want_dt), want_shape))
    for b in np.ndindex(*f.shape[:nb]):
        for j, u in enumerate(dirs):
            want, xs = ect(f[b], u, t, cons, weighted, spacing, normalize)
            g = got[b + (j,)]
            ok = np.allclose(g, want, rtol=1e-12, atol=1e-9) if weighted else np.array_equal(g, want.astype(np.int64))
            if not ok:
                sys.exit('image %s direction %d: %s, brute force %s' % (b, j, g, want))
    if len(sys.argv) > 11:   # default thresholds over [-R, R]
        T = int(sys.argv[11])
        xs = coords(f.shape[nb:], spacing, normalize)
        R = max(np.abs(heights(xs, u)).max() for u in dirs)
        w = np.array([-R + (2 * R) * k / (T - 1) for k in range(T)])
        w[-1] = R
        if not np.array_equal(t, w):
            sys.exit('thresholds %s, expected %s' % (t, w))
main()
PY
"$py" helper.py make || { echo "FAIL: cannot make inputs"; exit 1; }

# ok DESC INPUT DIRS CONS BATCH WEIGHTED SPACING NORMALIZE T-or-- CLI-OPTIONS...
ok() {
  local desc=$1 in=$2 dirs=$3 cons=$4 nb=$5 wt=$6 sp=$7 nz=$8 tcheck=$9
  shift 9
  local extra=()
  [ "$wt" = 1 ] && extra+=(--weighted)
  [ "$nz" = 1 ] && extra+=(--normalize)
  [ "$sp" = - ] || extra+=(--spacing "$sp")
  rm -f out.npy th.npy
  if ! "$cli" ect "$in" "$dirs" out.npy --construction "$cons" --batch-dims "$nb" --thresholds-out th.npy \
      "${extra[@]}" "$@" > last.out 2> last.err; then
    fail "$desc: exit $? ($(head -c 300 last.err))"
    return
  fi
  local e=()
  [ "$tcheck" = - ] || e=("$tcheck")
  if "$py" helper.py check "$in" "$dirs" out.npy th.npy "$cons" "$nb" "$wt" "$sp" "$nz" "${e[@]}" 2> cmp.err; then
    npass=$((npass + 1))
  else
    fail "$desc: $(tail -n 1 cmp.err)"
  fi
}
# bad DESC EXIT EXPECTED-SUBSTRING CLI-ARGS...: that exit status, one ndforge: line, no output
bad() {
  local desc=$1 want_rc=$2 want=$3
  shift 3
  rm -f out_bad.npy
  "$cli" ect "$@" > last.out 2> last.err
  local rc=$?
  if [ $rc -ne "$want_rc" ]; then fail "$desc: exit $rc, want $want_rc ($(head -c 300 last.err))"; return; fi
  if ! grep -q -- "$want" last.err; then fail "$desc: stderr lacks '$want': $(head -c 300 last.err)"; return; fi
  if [ "$(grep -c '^ndforge: ' last.err)" -ne 1 ]; then fail "$desc: not one ndforge: line"; return; fi
  if [ -e out_bad.npy ]; then fail "$desc: wrote an output"; return; fi
  npass=$((npass + 1))
}

ok "2-D uint8 binary V, [-R, R]" b2.npy d2.npy V 0 0 - 0 33 --thresholds 33
ok "2-D uint8 binary T, default 256" b2.npy d2.npy T 0 0 - 0 256
ok "2-D float32 binary T, --values" f2.npy d2.npy T 0 0 - 0 - --values vals.npy
ok "2-D float32 weighted V, spacing, normalize" f2.npy d2.npy V 0 1 0.5,2 1 17 --thresholds 17
ok "3-D float64 weighted T batch, range" w3.npy d3.npy T 1 1 - 0 - --range -4,4 --thresholds 9
ok "3-D float64 weighted V batch, one direction" w3.npy one3.npy V 1 1 1,2,0.5 0 - --values vals.npy
ok "3-D uint16 binary V, float32 directions" u3.npy d3.npy v 0 0 - 1 12 --thresholds 12
ok "3-D uint16 weighted T, --device cpu" u3.npy d3.npy T 0 1 - 0 - --values vals.npy --device cpu

bad "NaN direction" 1 "directions\[2, 1\]" b2.npy dnan.npy out_bad.npy
bad "direction width" 1 "(m, 2)" b2.npy d3.npy out_bad.npy
bad "int64 input" 1 "" i64.npy d2.npy out_bad.npy
bad "4 spatial axes" 1 "spatial axes" f4.npy d3.npy out_bad.npy
bad "spacing count" 2 "--spacing" b2.npy d2.npy out_bad.npy --spacing 1,2,3
bad "spacing sign" 2 "--spacing" b2.npy d2.npy out_bad.npy --spacing 1,-2
bad "values with thresholds" 2 "--values" b2.npy d2.npy out_bad.npy --values vals.npy --thresholds 4
bad "range order" 2 "--range" b2.npy d2.npy out_bad.npy --range 3,1
bad "construction name" 2 "--construction" b2.npy d2.npy out_bad.npy --construction X
bad "weighted takes no value" 2 "--weighted" b2.npy d2.npy out_bad.npy --weighted=1
bad "output type" 2 ".npy" b2.npy d2.npy out_bad.nii.gz
bad "missing output" 2 "OUT.npy" b2.npy d2.npy
bad "unknown option" 2 "--size" b2.npy d2.npy out_bad.npy --size 3
# --device cuda: with a GPU the same checks; without one the context's message (exit 1)
if "$cli" info 2> /dev/null | grep -q '^device 0:'; then
  ok "2-D uint8 binary V, --device cuda" b2.npy d2.npy V 0 0 - 0 33 --thresholds 33 --device cuda
  ok "2-D float32 weighted V, spacing, normalize, --device cuda" f2.npy d2.npy V 0 1 0.5,2 1 17 --thresholds 17 \
    --device cuda
  ok "3-D float64 weighted T batch, range, --device cuda" w3.npy d3.npy T 1 1 - 0 - --range -4,4 --thresholds 9 \
    --device cuda
  ok "3-D uint16 binary V, --device cuda" u3.npy d3.npy v 0 0 - 1 12 --thresholds 12 --device cuda
else
  bad "--device cuda without a GPU" 1 "" b2.npy d2.npy out_bad.npy --device cuda
fi
if "$cli" ect --help | grep -q -- "--weighted"; then npass=$((npass + 1)); else fail "ect --help"; fi

cli_summary
