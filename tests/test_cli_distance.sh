#!/usr/bin/env bash
# test_cli_distance.sh -- end-to-end tests of `ndforge run distance_transform_*`.
#
#   tests/test_cli_distance.sh path/to/ndforge SCRATCH_DIR
#
# Runs the three distance transforms on .npy and NIfTI inputs made with NumPy
# and compares distances (scipy's dtype) and --indices with scipy.ndimage;
# a NIfTI input's pixdim is edt's default sampling.  Bad options exit 2 with
# one "ndforge: ..." line and write no output.  Exits 77 (skipped) without a
# python3 that has numpy and scipy.
set -u
. "$(dirname "$0")/cli_common.sh"
cli_setup distance "numpy, scipy.ndimage" "$@"

cat > helper.py <<'PY'
import gzip, struct, sys, warnings
import numpy as np
import scipy.ndimage as ndi
warnings.simplefilter("ignore", FutureWarning)

def nifti_write(path, data, pixdim):
    h = bytearray(348)
    struct.pack_into('<i', h, 0, 348)
    struct.pack_into('<8h', h, 40, *([data.ndim] + list(data.shape) + [1] * (7 - data.ndim)))
    struct.pack_into('<hh', h, 70, 2, 8)  # uint8
    struct.pack_into('<8f', h, 76, 1.0, *(list(pixdim) + [1.0] * (7 - len(pixdim))))
    struct.pack_into('<f', h, 108, 352.0)
    h[344:348] = b'n+1\0'
    with gzip.open(path, 'wb') as f:
        f.write(bytes(h) + b'\0\0\0\0' + np.asarray(data, np.uint8).tobytes(order='F'))

def nifti_read(path):
    opener = gzip.open if path.endswith('.gz') else open
    blob = opener(path, 'rb').read()
    dims = struct.unpack_from('<8h', blob, 40)
    dt = {2: np.uint8, 8: np.int32, 16: np.float32, 64: np.float64, 768: np.uint32}[struct.unpack_from('<h', blob, 70)[0]]
    off = int(struct.unpack_from('<f', blob, 108)[0])
    shape = tuple(dims[1:1 + dims[0]])
    return np.frombuffer(blob[off:], dtype=dt)[:int(np.prod(shape))].reshape(shape, order='F')

def load(p):
    return np.load(p) if p.endswith('.npy') else nifti_read(p)

def main():
    cmd = sys.argv[1]
    if cmd == 'make':
        rng = np.random.default_rng(7)
        g = ndi.gaussian_filter(rng.standard_normal((3, 40, 50)), 3)
        x = g < np.quantile(g, 0.9)
        np.save('blob2.npy', x[0])
        np.save('blob3.npy', x.astype(np.float32))
        nifti_write('vol.nii.gz', x, (1.5, 0.5, 2.0))
        np.save('st.npy', rng.random((3, 3)) < 0.6)
        return
    # check OP INPUT DIST INDICES|- BATCH KWARGS
    op, inp, dist, idx, batch, kw = sys.argv[2:8]
    kw = eval(kw)
    x, nb = load(inp), int(batch)
    fn = getattr(ndi, op)
    for b in np.ndindex(*x.shape[:nb]):
        d, i = fn(x[b], return_indices=True, **kw)
        got = load(dist)[b]
        if got.dtype != d.dtype:
            sys.exit('%s: dtype %s, scipy %s' % (op, got.dtype, d.dtype))
        if not np.array_equal(got, d.astype(got.dtype)):
            sys.exit('%s: %d distances differ' % (op, int(np.sum(got != d.astype(got.dtype)))))
        if idx != '-':
            gi = np.load(idx)[b]
            if gi.dtype != np.int32 or not np.array_equal(gi, i):
                sys.exit('%s: indices differ (%s %s)' % (op, gi.dtype, gi.shape))
main()
PY
"$py" helper.py make || { echo "FAIL: cannot make inputs"; exit 1; }

# ok DESC OP INPUT DIST INDICES|- BATCH PY-KWARGS CLI-OPTIONS...
ok() {
  local desc=$1 op=$2 in=$3 dist=$4 idx=$5 batch=$6 kw=$7
  shift 7
  rm -f "$dist"
  local extra=()
  [ "$idx" = - ] || extra=(--indices "$idx")
  if ! "$cli" run "$op" "${extra[@]}" "$@" "$in" "$dist" > last.out 2> last.err; then
    fail "$desc: exit $? ($(head -c 300 last.err))"
    return
  fi
  if "$py" helper.py check "$op" "$in" "$dist" "$idx" "$batch" "$kw" 2> cmp.err; then npass=$((npass + 1)); else
    fail "$desc: $(tail -n 1 cmp.err)"
  fi
}
# bad DESC EXPECTED-SUBSTRING CLI-ARGS...: exit 2 or 1, one ndforge: line, no output
bad() {
  local desc=$1 want=$2
  shift 2
  rm -f out_bad.npy
  "$cli" run "$@" > last.out 2> last.err
  local rc=$?
  if [ $rc -eq 0 ]; then fail "$desc: exit 0"; return; fi
  if ! grep -q -- "$want" last.err; then fail "$desc: stderr lacks '$want': $(head -c 300 last.err)"; return; fi
  if [ -e out_bad.npy ]; then fail "$desc: wrote an output"; return; fi
  npass=$((npass + 1))
}

ok "edt" distance_transform_edt blob2.npy d1.npy i1.npy 0 "dict()"
ok "edt sampling" distance_transform_edt blob2.npy d2.npy i2.npy 0 "dict(sampling=(0.7, 1.3))" --sampling 0.7,1.3
ok "edt one sampling value" distance_transform_edt blob2.npy d3.npy - 0 "dict(sampling=2.5)" --sampling 2.5
ok "edt batch float32 input" distance_transform_edt blob3.npy d4.npy i4.npy 1 "dict()" --batch-dims 1
ok "edt NIfTI: pixdim is the sampling" distance_transform_edt vol.nii.gz d5.nii.gz - 0 "dict(sampling=(1.5, 0.5, 2.0))"
ok "edt NIfTI, --sampling wins" distance_transform_edt vol.nii.gz d6.nii.gz i6.npy 0 "dict()" --sampling 1
ok "cdt chessboard" distance_transform_cdt blob2.npy d7.npy i7.npy 0 "dict()"
ok "cdt taxicab" distance_transform_cdt blob2.npy d8.npy i8.npy 0 "dict(metric='taxicab')" --metric taxicab
ok "cdt structure" distance_transform_cdt blob2.npy d9.npy i9.npy 0 "dict(metric=np.load('st.npy'))" --structure st.npy
ok "cdt batch" distance_transform_cdt blob3.npy d10.npy - 1 "dict(metric='cityblock')" --metric cityblock --batch-dims 1
# Without --indices or --structure, --device auto runs cdt on CUDA where there is a device.
ok "cdt chessboard distances" distance_transform_cdt blob2.npy d12.npy - 0 "dict()"
ok "cdt structure, no indices" distance_transform_cdt blob2.npy d13.npy - 0 "dict(metric=np.load('st.npy'))" --structure st.npy
ok "bf euclidean sampling" distance_transform_bf blob2.npy d11.npy i11.npy 0 "dict(sampling=(2, 1))" --sampling 2,1
ok "bf chessboard" distance_transform_bf blob2.npy d12.npy i12.npy 0 "dict(metric='chessboard')" --metric chessboard
# edt float32: scipy's float64 distances rounded
rm -f d13.npy
if "$cli" run distance_transform_edt --output-dtype float32 blob2.npy d13.npy 2> last.err &&
   "$py" -c "
import numpy as np, scipy.ndimage as ndi, sys
d = np.load('d13.npy'); w = ndi.distance_transform_edt(np.load('blob2.npy')).astype(np.float32)
sys.exit(0 if d.dtype == np.float32 and np.array_equal(d, w) else 'float32 distances differ')"; then
  npass=$((npass + 1))
else
  fail "edt --output-dtype float32: $(head -c 300 last.err)"
fi

bad "edt bad sampling" "--sampling" distance_transform_edt --sampling 0,1 blob2.npy out_bad.npy
bad "edt sampling count" "sampling" distance_transform_edt --sampling 1,2,3 blob2.npy out_bad.npy
bad "edt takes no metric" "does not apply" distance_transform_edt --metric taxicab blob2.npy out_bad.npy
bad "cdt takes no sampling" "does not apply" distance_transform_cdt --sampling 1 blob2.npy out_bad.npy
bad "cdt euclidean" "metric" distance_transform_cdt --metric euclidean blob2.npy out_bad.npy
bad "bad metric name" "--metric" distance_transform_bf --metric hamming blob2.npy out_bad.npy
bad "edt int32 distances" "distances" distance_transform_edt --output-dtype int32 blob2.npy out_bad.npy
bad "indices file type" "indices" distance_transform_edt --indices idx.txt blob2.npy out_bad.npy
bad "cdt structure rank" "metric_structure" distance_transform_cdt --structure blob3.npy blob2.npy out_bad.npy

cli_summary
