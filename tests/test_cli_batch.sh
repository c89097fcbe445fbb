#!/usr/bin/env bash
# test_cli_batch.sh -- `ndforge run ... --batch-axis K`: the axis of independent images.
#
#   tests/test_cli_batch.sh path/to/ndforge SCRATCH_DIR
#
# A 4-D NIfTI (x, y, z, t) with --batch-axis 3 (or -1) is filtered one volume
# at a time, as scipy on each volume; the output keeps the input's axis order
# and header (dims, pixdim).  A middle axis of a .npy works the same way
# (--axes and --axis count the input's axes; --mask moves with the input), label prints one count per image, edt takes the NIfTI pixdim of the axes
# left spatial, histogram's output has the batch axis first, and the Gaussian
# Laplace / gradient magnitude take --axes, --truncate and --radius.  Bad
# values exit 1 or 2 with one "ndforge: ..." line and write no output.  Exits
# 77 (skipped) without a python3 that has numpy and scipy.
set -u
. "$(dirname "$0")/cli_common.sh"
cli_setup batch "numpy, scipy.ndimage" "$@"

cat > helper.py <<'PY'
import gzip, struct, sys
import numpy as np
import scipy.ndimage as ndi

DT = {2: np.uint8, 8: np.int32, 16: np.float32, 64: np.float64}

def nifti_write(path, data, pixdim):
    code = {np.dtype(v): k for k, v in DT.items()}[data.dtype]
    h = bytearray(348)
    struct.pack_into('<i', h, 0, 348)
    struct.pack_into('<8h', h, 40, *([data.ndim] + list(data.shape) + [1] * (7 - data.ndim)))
    struct.pack_into('<hh', h, 70, code, data.dtype.itemsize * 8)
    struct.pack_into('<8f', h, 76, 1.0, *(list(pixdim) + [1.0] * (7 - len(pixdim))))
    struct.pack_into('<f', h, 108, 352.0)
    h[344:348] = b'n+1\0'
    with gzip.open(path, 'wb') as f:
        f.write(bytes(h) + b'\0\0\0\0' + data.tobytes(order='F'))

def nifti_read(path):
    blob = gzip.open(path, 'rb').read()
    dims = struct.unpack_from('<8h', blob, 40)
    dt = DT[struct.unpack_from('<h', blob, 70)[0]]
    off = int(struct.unpack_from('<f', blob, 108)[0])
    shape = tuple(dims[1:1 + dims[0]])
    data = np.frombuffer(blob[off:], dtype=dt)[:int(np.prod(shape))].reshape(shape, order='F')
    return data, dims, struct.unpack_from('<8f', blob, 76)

def per_image(f, x, axis):
    """f applied to each image along axis, stacked back along it."""
    return np.stack([f(np.take(x, i, axis)) for i in range(x.shape[axis])], axis)

def close(got, want, what):
    if got.shape != want.shape or got.dtype != want.dtype:
        sys.exit('%s: %s %s, expected %s %s' % (what, got.shape, got.dtype, want.shape, want.dtype))
    if want.dtype.kind == 'f':
        ok = np.allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        ok = np.array_equal(got, want)
    if not ok:
        sys.exit('%s: values differ (max %g)' % (what, np.abs(got.astype(float) - want.astype(float)).max()))

cmd = sys.argv[1]
rng = np.random.default_rng(7)
if cmd == 'make':
    nifti_write('in4d.nii.gz', (rng.random((9, 8, 7, 4)) * 100).astype(np.float32), (1.5, 2.0, 2.5, 3.0))
    nifti_write('mask4d.nii.gz', (rng.random((10, 9, 8, 3)) < 0.8).astype(np.uint8), (1.5, 2.0, 2.5, 3.0))
    zm = np.zeros((9, 8, 7, 4), np.uint8)
    zm[2:7, 1:6, 2:6] = 1
    nifti_write('zmask.nii.gz', zm, (1.5, 2.0, 2.5, 3.0))
    np.save('stack.npy', (rng.random((6, 5, 7, 8)) * 200).astype(np.int16))
    np.save('blobs.npy', (rng.random((7, 3, 9, 8)) < 0.4).astype(np.uint8))
    np.save('seed.npy', (rng.random((7, 3, 9, 8)) < 0.03).astype(np.uint8))
elif cmd == 'gauss':  # OUT AXIS_OF_TIME_IN_THE_COMMAND
    x, dims, pix = nifti_read('in4d.nii.gz')
    want = per_image(lambda v: ndi.gaussian_filter(v, 2.0), x, 3)
    path = sys.argv[2]
    if path.endswith('.npy'):
        close(np.load(path), want, path)
    else:
        y, ydims, ypix = nifti_read(path)
        close(y, want, path)
        if ydims != dims or ypix[1:5] != pix[1:5]:
            sys.exit('%s: header dims %s pixdim %s, expected %s %s' % (path, ydims, ypix[1:5], dims, pix[1:5]))
elif cmd == 'erosion':  # axis 1 of a .npy
    close(np.load('ero.npy'), per_image(lambda v: ndi.grey_erosion(v, size=3), np.load('stack.npy'), 1), 'erosion')
elif cmd == 'sobel':  # --axis 2 of the input, batch axis 1: the image's axis 1
    close(np.load('sob.npy'), per_image(lambda v: ndi.sobel(v, axis=1), np.load('stack.npy'), 1), 'sobel')
elif cmd == 'label':  # the printed counts, then the labels
    x = np.load('blobs.npy')
    labs = [ndi.label(x[:, i]) for i in range(x.shape[1])]
    want = 'num_features: ' + ' '.join(str(n) for _, n in labs)
    got = open('label.txt').read().strip()
    if got != want:
        sys.exit('label: printed %r, expected %r' % (got, want))
    close(np.load('lab.npy'), np.stack([l for l, _ in labs], 1).astype(np.int32), 'labels')
elif cmd == 'mask':  # --mask moves with the input
    m, seed = np.load('blobs.npy') != 0, np.load('seed.npy') != 0
    want = np.stack([ndi.binary_propagation(seed[:, i], mask=m[:, i]) for i in range(3)], 1)
    close(np.load('prop.npy'), want, 'binary_propagation')
    x, _, _ = nifti_read('in4d.nii.gz')
    mk = np.zeros(x.shape, bool)
    mk[2:7, 1:6, 2:6] = True
    def z(t):
        a, k = x[..., t].astype(np.float64), mk[..., t]
        return ((a - a[k].mean()) / a[k].std()).astype(np.float32)
    close(np.load('z.npy'), np.stack([z(t) for t in range(4)], 3), 'normalize_zscore')
elif cmd == 'edt':  # batch axis 1: the spatial axes are 0, 2, 3 with their pixdim
    x, dims, pix = nifti_read('mask4d.nii.gz')
    want = per_image(lambda v: ndi.distance_transform_edt(v, sampling=(pix[1], pix[3], pix[4])), x, 1)
    close(np.load('edt.npy'), want, 'edt')
elif cmd == 'hist':  # (t, bins): one histogram per volume, the batch axis first
    x, _, _ = nifti_read('in4d.nii.gz')
    want = np.stack([np.histogram(x[..., t], bins=5, range=(0, 100))[0] for t in range(4)]).astype(np.int64)
    close(np.load('hist.npy'), want, 'histogram')
elif cmd == 'laplace':  # --axes 2,0 --sigma 1.5,2 --truncate 3: terms in axes order, passes by axis
    x, _, _ = nifti_read('in4d.nii.gz')
    def gl(v):
        out = None
        for a in (2, 0):
            order = [0, 0, 0]
            order[a] = 2
            t = ndi.gaussian_filter(v, [2.0, 0, 1.5], order, np.float32, truncate=3.0)
            out = t if out is None else out + t
        return out
    close(np.load('gl.npy'), per_image(gl, x, 3), 'gaussian_laplace')
    want = per_image(lambda v: ndi.gaussian_gradient_magnitude(v, 1.2, mode='nearest', radius=3), x, 3)
    close(np.load('ggm.npy'), want, 'gaussian_gradient_magnitude')
PY

"$py" helper.py make || { echo "FAIL: cannot make the inputs"; exit 1; }

# run NAME CHECK ARGS...: ndforge run ARGS, then helper.py CHECK...
check() {
  local name=$1 chk=$2
  shift 2
  "$cli" run "$@" > run.txt 2> err.txt
  local rc=$?
  if [ $rc != 0 ]; then
    fail "$name: exit $rc: $(head -c 300 err.txt)"
  elif ! "$py" helper.py $chk; then
    fail "$name"
  else
    npass=$((npass + 1))
    echo "ok   $name"
  fi
}

check "4-D NIfTI, --batch-axis 3, header kept" "gauss out.nii.gz" \
  gaussian_filter --sigma 2 in4d.nii.gz out.nii.gz --batch-axis 3
check "4-D NIfTI, --batch-axis -1, .npy out" "gauss out.npy" \
  gaussian_filter --sigma 2 --batch-axis=-1 in4d.nii.gz out.npy
check "--batch-axis 1 of a .npy" "erosion" grey_erosion --size 3 --batch-axis 1 stack.npy ero.npy
check "--axis counts the input's axes" "sobel" sobel --axis 2 --batch-axis 1 stack.npy sob.npy
if "$cli" run label --batch-axis 1 blobs.npy lab.npy > label.txt 2> err.txt && "$py" helper.py label; then
  npass=$((npass + 1)); echo "ok   label: one count per image"
else
  fail "label --batch-axis 1: $(head -c 300 err.txt)"
fi
"$cli" run binary_propagation --mask blobs.npy --batch-axis 1 seed.npy prop.npy 2> err.txt ||
  fail "binary_propagation --mask: $(head -c 300 err.txt)"
check "--mask moves with the input" "mask" normalize_zscore --mask zmask.nii.gz --batch-axis 3 in4d.nii.gz z.npy
check "edt: the pixdim of the spatial axes" "edt" distance_transform_edt --batch-axis 1 mask4d.nii.gz edt.npy
check "histogram: the batch axis first" "hist" histogram --bins 5 --range 0,100 --batch-axis 3 in4d.nii.gz hist.npy
"$cli" run gaussian_gradient_magnitude --sigma 1.2 --radius 3 --mode nearest --batch-axis 3 in4d.nii.gz ggm.npy \
  2> err.txt || fail "gaussian_gradient_magnitude --radius: $(head -c 300 err.txt)"
check "gaussian_laplace --axes --truncate, gaussian_gradient_magnitude --radius" "laplace" \
  gaussian_laplace --sigma 1.5,2 --axes 2,0 --truncate 3 --batch-axis 3 in4d.nii.gz gl.npy

# refusals: exit status, one "ndforge: " line naming the rule, no output file
refuse() {
  local want=$1 pattern=$2
  shift 2
  rm -f bad.npy
  "$cli" run "$@" > run.txt 2> err.txt
  local rc=$?
  if [ $rc != "$want" ] || [ "$(wc -l < err.txt)" != 1 ] || ! grep -q "^ndforge: .*$pattern" err.txt ||
     [ -e bad.npy ]; then
    fail "'$*': expected exit $want and '$pattern', got $rc: $(head -c 300 err.txt)"
  else
    npass=$((npass + 1))
    echo "ok   refused ($rc): $*"
  fi
}
refuse 1 "--batch-axis 4: the input has 4 axes" gaussian_filter --sigma 1 --batch-axis 4 in4d.nii.gz bad.npy
refuse 1 "--batch-axis -5: the input has 4 axes" gaussian_filter --sigma 1 --batch-axis=-5 in4d.nii.gz bad.npy
refuse 2 "cannot be combined" gaussian_filter --sigma 1 --batch-axis 3 --batch-dims 1 in4d.nii.gz bad.npy
refuse 2 "batch-axis" gaussian_filter --sigma 1 --batch-axis t in4d.nii.gz bad.npy
refuse 1 "--axes: axis -1 is the --batch-axis" gaussian_filter --sigma 1 --axes 0,-1 --batch-axis 3 in4d.nii.gz bad.npy
refuse 1 "--axis: axis 1 is the --batch-axis" sobel --axis 1 --batch-axis 1 stack.npy bad.npy
cli_summary
