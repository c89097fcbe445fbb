#!/usr/bin/env bash
# test_cli_sinkhorn.sh -- end-to-end tests of `ndforge sinkhorn`.
#
#   tests/test_cli_sinkhorn.sh path/to/ndforge SCRATCH_DIR
#
# Makes random (n, d) histograms with NumPy, runs the tool with grid costs
# (p = 1, 2, euclidean), a dense --cost, scaling and --log-domain, and compares
# OUT (float64 transport costs <P, C>) with a plain NumPy implementation of the
# textbook Sinkhorn iteration written here (the tool normalizes the rows; so
# does the oracle).  Bad command lines exit 2, failures exit 1, both with one
# "ndforge: ..." line and no output file.  Exits 77 (skipped) without a python3
# that has numpy.
set -u
. "$(dirname "$0")/cli_common.sh"
cli_setup sinkhorn "numpy" "$@"

cat > oracle.py <<'PY'
import sys
import numpy as np

def grid_cost(shape, kind):
    idx = np.indices(shape).reshape(len(shape), -1).T.astype(np.float64)
    diff = np.abs(idx[:, None, :] - idx[None, :, :])
    if kind == 'euclidean':
        return np.sqrt((diff ** 2).sum(-1))
    return (diff ** int(kind)).sum(-1)

def lse(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide='ignore'):
        return np.squeeze(m, axis) + np.log(np.exp(x - m).sum(axis))

def sinkhorn_cost(a, b, C, eps, iters):
    # log-domain textbook iteration, then <P, C>
    with np.errstate(divide='ignore'):
        la, lb = np.log(a), np.log(b)
    g = np.zeros_like(b)
    for _ in range(iters):
        f = la - lse(g[None, :] - C / eps, 1)
        g = lb - lse(f[:, None] - C / eps, 0)
    P = np.exp(f[:, None] + g[None, :] - C / eps)
    return float((P * C).sum())

def main():
    cmd = sys.argv[1]
    if cmd == 'make':
        seed, n, d, dtype, zfrac = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], float(sys.argv[6])
        rng = np.random.default_rng(seed)
        for name in ('A', 'B'):
            h = rng.uniform(0.05, 1.0, (n, d)) * (rng.uniform(size=(n, d)) >= zfrac)
            h[:, 0] += 0.1
            if dtype == 'uint8':
                h = np.round(h * 200).astype(np.uint8) + 1
            elif dtype == 'vec':
                h = h[0]
            else:
                h = h.astype(dtype)
            np.save(f'{name}{seed}.npy', h)
        np.save(f'C{seed}.npy', rng.uniform(0, 3, (d, d)))
        return
    # check OUT A B eps iters (grid SHAPE KIND | cost FILE) rtol
    out, A, B, eps, iters, ck, cv, rtol = sys.argv[2:10]
    a = np.load(A).astype(np.float64); b = np.load(B).astype(np.float64)
    if a.ndim == 1:
        a, b = a[None], b[None]
    a /= a.sum(1, keepdims=True); b /= b.sum(1, keepdims=True)
    if ck == 'grid':
        shape, kind = cv.split(':')
        C = grid_cost(tuple(int(s) for s in shape.split(',')), kind)
    else:
        C = np.load(cv)
    want = np.array([sinkhorn_cost(a[k], b[k], C, float(eps), int(iters)) for k in range(a.shape[0])])
    got = np.load(out)
    if got.dtype != np.float64 or got.shape != (a.shape[0],):
        sys.exit(f'OUT has dtype {got.dtype} shape {got.shape}')
    if not np.allclose(got, want, rtol=float(rtol), atol=1e-12):
        sys.exit(f'costs differ: got {got} want {want}')

main()
PY

# ok NAME SEED N D DTYPE ZFRAC EPS ITERS COSTKIND COSTVAL RTOL -- tool options
ok() {
  local name=$1 seed=$2 n=$3 d=$4 dt=$5 zf=$6 eps=$7 it=$8 ck=$9 cv=${10} rtol=${11}
  shift 11
  "$py" oracle.py make "$seed" "$n" "$d" "$dt" "$zf" || { fail "$name: make inputs"; return; }
  rm -f "out$seed.npy"
  if ! "$cli" sinkhorn "A$seed.npy" "B$seed.npy" "out$seed.npy" --epsilon "$eps" --max-iter "$it" "$@" 2> last.err; then
    fail "$name: exit $?: $(head -c 300 last.err)"
    return
  fi
  if "$py" oracle.py check "out$seed.npy" "A$seed.npy" "B$seed.npy" "$eps" "$it" "$ck" "$cv" "$rtol"; then
    npass=$((npass + 1))
  else
    fail "$name"
  fi
}

ok "grid p=2 scaling" 1 5 30 float64 0.0 0.5 50 grid 6,5:2 1e-9 --grid 6,5
ok "grid p=1 log" 2 4 30 float32 0.2 0.3 80 grid 6,5:1 1e-9 --grid 6,5 --p 1 --log-domain
ok "grid p=2 3-D log" 3 3 24 float64 0.1 0.2 60 grid 2,3,4:2 1e-9 --grid 2,3,4 --p 2 --log-domain
ok "grid euclidean" 4 3 16 uint8 0.0 0.4 40 grid 4,4:euclidean 1e-9 --grid 4,4 --euclidean
ok "dense cost" 5 4 12 float64 0.2 0.5 70 cost C5.npy 1e-9 --cost C5.npy
ok "dense cost log small eps" 6 2 12 float64 0.0 0.01 200 cost C6.npy 1e-7 --cost C6.npy --log-domain
ok "one histogram (d,)" 7 1 20 vec 0.0 0.5 30 grid 20:2 1e-9 --grid 20
ok "tol early exit" 8 3 30 float64 0.0 0.5 3000 grid 6,5:2 1e-6 --grid 6,5 --tol 1e-11 --check-every 5

# bad: NAME EXIT PATTERN -- tool arguments (OUT is always out_bad.npy)
bad() {
  local name=$1 code=$2 pat=$3
  shift 3
  rm -f out_bad.npy
  "$cli" sinkhorn "$@" 2> last.err
  local rc=$?
  if [ $rc -ne "$code" ]; then
    fail "$name: exit $rc, expected $code: $(head -c 300 last.err)"
  elif ! grep -q -- "$pat" last.err; then
    fail "$name: message '$(head -c 300 last.err)' lacks '$pat'"
  elif [ "$(wc -l < last.err)" -ne 1 ] || ! grep -q '^ndforge: ' last.err; then
    fail "$name: not one 'ndforge: ' line: $(head -c 300 last.err)"
  elif [ -e out_bad.npy ]; then
    fail "$name: wrote an output"
  else
    npass=$((npass + 1))
  fi
}
bad "no epsilon" 2 "--epsilon" A1.npy B1.npy out_bad.npy --max-iter 10 --grid 6,5
bad "no max-iter" 2 "--max-iter" A1.npy B1.npy out_bad.npy --epsilon 1 --grid 6,5
bad "epsilon 0" 2 "--epsilon" A1.npy B1.npy out_bad.npy --epsilon 0 --max-iter 10 --grid 6,5
bad "epsilon text" 2 "--epsilon" A1.npy B1.npy out_bad.npy --epsilon abc --max-iter 10 --grid 6,5
bad "no cost" 2 "--grid and --cost" A1.npy B1.npy out_bad.npy --epsilon 1 --max-iter 10
bad "both costs" 2 "--grid and --cost" A1.npy B1.npy out_bad.npy --epsilon 1 --max-iter 10 --grid 6,5 --cost C5.npy
bad "p 3" 2 "--p" A1.npy B1.npy out_bad.npy --epsilon 1 --max-iter 10 --grid 6,5 --p 3
bad "p without grid" 2 "--grid" A5.npy B5.npy out_bad.npy --epsilon 1 --max-iter 10 --cost C5.npy --p 1
bad "bad grid" 2 "--grid" A1.npy B1.npy out_bad.npy --epsilon 1 --max-iter 10 --grid 6,x
bad "unknown option" 2 "--frobnicate" A1.npy B1.npy out_bad.npy --epsilon 1 --max-iter 10 --grid 6,5 --frobnicate 1
bad "grid size mismatch" 1 "bins" A1.npy B1.npy out_bad.npy --epsilon 1 --max-iter 10 --grid 6,6
bad "A/B mismatch" 1 "histograms" A1.npy B2.npy out_bad.npy --epsilon 1 --max-iter 10 --grid 6,5
bad "cost shape" 1 "cost matrix" A1.npy B1.npy out_bad.npy --epsilon 1 --max-iter 10 --cost C5.npy
bad "missing file" 1 "nothere.npy" nothere.npy B1.npy out_bad.npy --epsilon 1 --max-iter 10 --grid 6,5
# --device cuda: with a GPU the oracle's numbers (float64); without one, a clear failure.
has_cuda=0
if "$cli" info > info.out 2>&1 && grep -q '^device 0:' info.out; then has_cuda=1; fi
if [ "$has_cuda" = 1 ]; then
  ok "cuda grid p=2 log" 9 4 30 float64 0.2 0.3 80 grid 6,5:2 1e-9 --grid 6,5 --log-domain --device cuda
  ok "cuda dense scaling" 10 3 12 float64 0.0 0.5 70 cost C10.npy 1e-9 --cost C10.npy --device cuda
  ok "cuda euclidean" 11 3 16 float64 0.0 0.4 40 grid 4,4:euclidean 1e-9 --grid 4,4 --euclidean --device cuda
else
  bad "cuda without a GPU" 1 "ndf_ctx_create" A1.npy B1.npy out_bad.npy --epsilon 1 --max-iter 10 --grid 6,5 --device cuda
fi
"$py" -c "import numpy as np; np.save('neg.npy', -np.ones((2, 30))); np.save('Cbig.npy', 1 + np.load('C5.npy'))"
bad "scaling underflow" 1 "log domain" A5.npy B5.npy out_bad.npy --epsilon 0.001 --max-iter 10 --cost Cbig.npy
bad "negative histogram" 1 "neg.npy" neg.npy neg.npy out_bad.npy --epsilon 1 --max-iter 10 --grid 6,5

cli_summary
