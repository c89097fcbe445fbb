#!/usr/bin/env bash
# test_cli_interp.sh -- end-to-end tests of `ndforge run` for the
# interpolation ops and `ndforge run resample`.
#
#   tests/test_cli_interp.sh path/to/ndforge SCRATCH_DIR
#
# Every op on a random float32 volume against scipy.ndimage (equal values; a
# bool output byte for byte);
# bad command lines exit 2 and failures exit 1, both with no output file.
# resample: a NIfTI-1 volume with an oblique sform and a qform (written here
# byte by byte, so nibabel is not needed) goes to another spacing; the test
# reads the output header and checks dim and pixdim, that every output voxel's
# world point (through the output's sform and its qform) is the input's world
# point of the input coordinate the voxels were sampled at (o r + t, the
# grids' centres aligned), and the values against scipy's affine_transform
# with that diagonal matrix and offset.  Exits 77 without numpy and scipy.
set -u
. "$(dirname "$0")/cli_common.sh"
cli_setup interp "numpy, scipy.ndimage" "$@"

cat > ops.py <<'PY'
import subprocess, sys
import numpy as np, scipy.ndimage as ndi
cli = sys.argv[1]
rng = np.random.default_rng(7)
x = (rng.normal(size=(9, 11, 7)) * 100).astype(np.float32); np.save('x.npy', x)
m = np.eye(3) + rng.normal(size=(3, 3)) * 0.2; np.save('m.npy', m)
c = rng.uniform(-1, 9, size=(3, 5, 4)); np.save('c.npy', c)
cases = [
    (['zoom', '--zoom', '1.5,0.7,2', '--order', '1'], lambda: ndi.zoom(x, (1.5, 0.7, 2), order=1)),
    (['zoom', '--zoom', '1.3', '--grid-mode', '--mode', 'nearest'], lambda: ndi.zoom(x, 1.3, grid_mode=True, mode='nearest')),
    (['shift', '--shift', '1.5,-2,0.25', '--mode', 'wrap', '--order', '5'], lambda: ndi.shift(x, (1.5, -2, 0.25), mode='wrap', order=5)),
    (['rotate', '--angle', '30', '--axes', '0,2'], lambda: ndi.rotate(x, 30, axes=(0, 2))),
    (['rotate', '--angle', '-71', '--no-reshape', '--cval', '3'], lambda: ndi.rotate(x, -71, axes=(1, 0), reshape=False, cval=3)),
    (['affine_transform', '--matrix', 'm.npy', '--offset', '1,2,-1', '--output-shape', '8,8,8', '--output-dtype', 'int16'],
     lambda: ndi.affine_transform(x, m, offset=(1, 2, -1), output_shape=(8, 8, 8), output=np.int16)),
    (['map_coordinates', '--coordinates', 'c.npy', '--order', '2', '--mode', 'reflect'], lambda: ndi.map_coordinates(x, c, order=2, mode='reflect')),
    (['spline_filter', '--order', '4', '--output-dtype', 'float64'], lambda: ndi.spline_filter(x, 4, output=np.float64)),
    (['spline_filter1d', '--axis', '1', '--output-dtype', 'float64'], lambda: ndi.spline_filter1d(x, 3, axis=1, output=np.float64)),
    # --batch-axis K: each image along axis K alone, the output in the input's axis order
    (['zoom', '--zoom', '1.5,0.7', '--order', '1', '--batch-axis', '1'],
     lambda: np.stack([ndi.zoom(x[:, k], (1.5, 0.7), order=1) for k in range(x.shape[1])], axis=1)),
    (['rotate', '--angle', '30', '--batch-axis', '-1'],
     lambda: np.stack([ndi.rotate(x[..., k], 30, axes=(1, 0)) for k in range(x.shape[2])], axis=2)),
    (['spline_filter1d', '--axis', '2', '--batch-axis', '0', '--output-dtype', 'float64'],
     lambda: ndi.spline_filter1d(x, 3, axis=2, output=np.float64)),
    (['map_coordinates', '--coordinates', 'c2.npy', '--order', '1', '--batch-axis', '2'],
     lambda: np.stack([ndi.map_coordinates(x[..., k], c[:2], order=1) for k in range(x.shape[2])])),
    # a bool output as scipy stores it (C's cast: bytes other than 0 and 1 too; compared byte for byte)
    (['zoom', '--zoom', '1.5,0.7,2', '--order', '1', '--output-dtype', 'bool'],
     lambda: ndi.zoom(x, (1.5, 0.7, 2), order=1, output=bool)),
    (['spline_filter', '--order', '3', '--output-dtype', 'bool'], lambda: ndi.spline_filter(x, 3, output=bool)),
    (['spline_filter1d', '--order', '0', '--output-dtype', 'bool'], lambda: ndi.spline_filter1d(x, 0, output=bool)),
    (['shift', '--shift', '0.5,1,-1', '--order', '1', '--output-dtype', 'uint64'],
     lambda: ndi.shift(np.abs(x), (0.5, 1, -1), order=1, output=np.uint64), 'xa.npy'),
]
np.save('xa.npy', np.abs(x))
np.save('c2.npy', c[:2])
# empty arrays as scipy: a zoom to empty axes; an input with an empty axis (points outside it are cval)
e = np.zeros((0, 5, 4), np.float32); np.save('e.npy', e)
cases += [
    (['zoom', '--zoom', '0.01'], lambda: ndi.zoom(x, 0.01)),
    (['zoom', '--zoom', '2', '--order', '1'], lambda: ndi.zoom(e, 2, order=1), 'e.npy'),
    (['rotate', '--angle', '30', '--axes', '0,1', '--cval', '3', '--output-dtype', 'int16'],
     lambda: ndi.rotate(e, 30, axes=(0, 1), cval=3, output=np.int16), 'e.npy'),
]
bad = 0
for i, (args, ref, *src) in enumerate(cases):
    out = 'o%d.npy' % i
    r = subprocess.run([cli, 'run', args[0], src[0] if src else 'x.npy', out] + args[1:], capture_output=True, text=True)
    want = ref()
    if r.returncode != 0:
        print('FAIL: %s exited %d: %s' % (' '.join(args), r.returncode, r.stderr.strip())); bad += 1; continue
    got = np.load(out)
    if want.dtype == np.bool_ and got.dtype == want.dtype:
        got, want = got.view(np.uint8), want.view(np.uint8)
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        print('FAIL: %s: %s %s, scipy %s %s, max diff %s' % (' '.join(args), got.dtype, got.shape, want.dtype,
              want.shape, np.abs(got.astype(float) - want.astype(float)).max() if got.shape == want.shape else '-'))
        bad += 1
print('%d of %d ops equal scipy' % (len(cases) - bad, len(cases)))
sys.exit(1 if bad else 0)
PY
if "$py" ops.py "$cli"; then npass=$((npass + 1)); else fail "ops against scipy"; fi

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
expect_exit 2 zoom x.npy bad.npy
expect_exit 2 zoom x.npy bad.npy --zoom 2 --order 6
expect_exit 2 zoom x.npy bad.npy --zoom 2 --mode edge
expect_exit 1 zoom x.npy bad.npy --zoom -1
expect_exit 1 rotate e.npy bad.npy --angle 30 --mode nearest
expect_exit 1 shift x.npy bad.npy --shift 1,2
expect_exit 2 rotate x.npy bad.npy
expect_exit 1 rotate x.npy bad.npy --angle 10 --axes 1,1
expect_exit 1 affine_transform x.npy bad.npy --matrix c.npy
expect_exit 2 resample x.npy bad.npy --spacing 1

# resample: a NIfTI-1 volume written byte by byte.
cat > resample.py <<'PY'
import struct, subprocess, sys, warnings
import numpy as np, scipy.ndimage as ndi
cli = sys.argv[1]
rng = np.random.default_rng(3)
shape = (20, 17, 11)                     # x, y, z
pix = (1.2, 0.9, 2.5)
vol = (rng.normal(size=shape) * 100).astype(np.float32)
a = np.radians(20.0)
rot = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
sform = np.eye(4)
sform[:3, :3] = rot @ np.diag(pix)
sform[:3, 3] = (-10.5, 4.25, 30.0)
# the qform: the same rotation, quaternion (0, 0, sin(a/2)), another offset
qb, qc, qd = 0.0, 0.0, np.sin(a / 2)
qoff = (5.0, -6.0, 7.5)

def header(shape, pix, sform, qbcd, qoff, datatype=16, bitpix=32):
    h = bytearray(348)
    struct.pack_into('<i', h, 0, 348)
    dim = [len(shape)] + list(shape) + [1] * (7 - len(shape))
    struct.pack_into('<8h', h, 40, *dim)
    struct.pack_into('<h', h, 70, datatype)
    struct.pack_into('<h', h, 72, bitpix)
    struct.pack_into('<8f', h, 76, 1.0, *pix, *([1.0] * (7 - len(pix))))
    struct.pack_into('<f', h, 108, 352.0)  # vox_offset
    struct.pack_into('<h', h, 252, 1)      # qform_code
    struct.pack_into('<h', h, 254, 2)      # sform_code
    struct.pack_into('<3f', h, 256, *qbcd)
    struct.pack_into('<3f', h, 268, *qoff)
    for i in range(3):
        struct.pack_into('<4f', h, 280 + 16 * i, *sform[i])
    h[344:348] = b'n+1\0'
    return bytes(h)

with open('in.nii', 'wb') as f:
    f.write(header(shape, pix, sform, (qb, qc, qd), qoff))
    f.write(b'\0\0\0\0')
    f.write(vol.tobytes(order='F'))

spacing = (1.0, 1.0, 1.0)
r = subprocess.run([cli, 'run', 'resample', 'in.nii', 'out.nii', '--spacing', ','.join(map(str, spacing)),
                    '--order', '1', '--mode', 'nearest', '--device', 'cpu'], capture_output=True, text=True)
if r.returncode:
    print('FAIL: resample exited %d: %s' % (r.returncode, r.stderr.strip())); sys.exit(1)
data = open('out.nii', 'rb').read()
dim = struct.unpack_from('<8h', data, 40)
opix = struct.unpack_from('<8f', data, 76)
vox = int(struct.unpack_from('<f', data, 108)[0])
qcode, scode = struct.unpack_from('<2h', data, 252)
oq = struct.unpack_from('<3f', data, 256)
ooff = struct.unpack_from('<3f', data, 268)
osf = np.eye(4)
for i in range(3):
    osf[i] = struct.unpack_from('<4f', data, 280 + 16 * i)
oshape = tuple(dim[1:1 + dim[0]])
ok = True
# stated rounding: round(n * old / new), half to even
want_shape = tuple(int(round(n * p / s)) for n, p, s in zip(shape, pix, spacing))
if oshape != want_shape:
    print('FAIL: output shape %s, want %s' % (oshape, want_shape)); ok = False
if not np.allclose(opix[1:4], spacing):
    print('FAIL: pixdim %s, want %s' % (opix[1:4], spacing)); ok = False
if (qcode, scode) != (1, 2) or not np.allclose(oq, (qb, qc, qd)):
    print('FAIL: qform/sform codes %s, quaternion %s' % ((qcode, scode), oq)); ok = False
# the header holds pixdim as float32: the tool's old spacing is that
ratio = np.array(spacing) / np.array(pix, np.float32).astype(np.float64)
t = (np.array(shape) - 1) / 2 - (np.array(oshape) - 1) / 2 * ratio

def qmat(b, c, d, off, p):
    a_ = np.sqrt(max(0.0, 1 - b * b - c * c - d * d))
    R = np.array([[a_*a_+b*b-c*c-d*d, 2*(b*c-a_*d), 2*(b*d+a_*c)],
                  [2*(b*c+a_*d), a_*a_+c*c-b*b-d*d, 2*(c*d-a_*b)],
                  [2*(b*d-a_*c), 2*(c*d+a_*b), a_*a_+d*d-c*c-b*b]])
    M = np.eye(4); M[:3, :3] = R @ np.diag(p); M[:3, 3] = off
    return M

qin = qmat(qb, qc, qd, qoff, pix)
qout = qmat(*oq, ooff, opix[1:4])
# every corner and the centre of the output grid
pts = [np.array(c, float) for c in np.ndindex(2, 2, 2)]
pts = [p * (np.array(oshape) - 1) for p in pts] + [(np.array(oshape) - 1) / 2]
for o in pts:
    i = o * ratio + t
    for name, win, wout in (('sform', sform, osf), ('qform', qin, qout)):
        w_in = (win @ np.append(i, 1))[:3]
        w_out = (wout @ np.append(o, 1))[:3]
        if not np.allclose(w_in, w_out, atol=1e-3):
            print('FAIL: %s: output voxel %s is at %s, its input point at %s' % (name, o, w_out, w_in)); ok = False
got = np.frombuffer(data[vox:], np.float32).reshape(oshape, order='F')
with warnings.catch_warnings():
    warnings.simplefilter('ignore')  # scipy's note on the 1-D matrix form
    want = ndi.affine_transform(vol, ratio, offset=t, output_shape=oshape, order=1, mode='nearest')
if not np.array_equal(got, want):
    print('FAIL: resampled values differ from scipy (max %g)' % np.abs(got - want).max()); ok = False
print('resample: shape %s -> %s, spacing %s -> %s, %s' % (shape, oshape, pix, spacing, 'ok' if ok else 'FAILED'))

# A 4-D (x, y, z, t) volume with --batch-axis 3 (and -1): each time point as the 3-D volume
# alone, the header as the 3-D output's with dim[4] and pixdim[4] (the time step) kept.
nt, tr = 3, 2.5
vols = (rng.normal(size=shape + (nt,)) * 100).astype(np.float32)
with open('in4.nii', 'wb') as f:
    f.write(header(shape + (nt,), pix + (tr,), sform, (qb, qc, qd), qoff))
    f.write(b'\0\0\0\0')
    f.write(vols.tobytes(order='F'))
args = ['--spacing', '1.5,1,2', '--order', '3', '--mode', 'mirror', '--device', 'cpu']
alone = []
for k in range(nt):
    with open('in3_%d.nii' % k, 'wb') as f:
        f.write(header(shape, pix, sform, (qb, qc, qd), qoff))
        f.write(b'\0\0\0\0')
        f.write(np.ascontiguousarray(vols[..., k]).tobytes(order='F'))
    r = subprocess.run([cli, 'run', 'resample', 'in3_%d.nii' % k, 'out3_%d.nii' % k] + args, capture_output=True, text=True)
    if r.returncode:
        print('FAIL: resample of time point %d exited %d: %s' % (k, r.returncode, r.stderr.strip())); sys.exit(1)
    alone.append(open('out3_%d.nii' % k, 'rb').read())
dim3 = struct.unpack_from('<8h', alone[0], 40)
vox3 = int(struct.unpack_from('<f', alone[0], 108)[0])
o3 = tuple(dim3[1:4])
for ax in ('3', '-1'):
    r = subprocess.run([cli, 'run', 'resample', 'in4.nii', 'out4.nii', '--batch-axis', ax] + args, capture_output=True,
                       text=True)
    if r.returncode:
        print('FAIL: resample --batch-axis %s exited %d: %s' % (ax, r.returncode, r.stderr.strip())); ok = False
        continue
    d4 = open('out4.nii', 'rb').read()
    dim4 = struct.unpack_from('<8h', d4, 40)
    pix4 = struct.unpack_from('<8f', d4, 76)
    vox4 = int(struct.unpack_from('<f', d4, 108)[0])
    if dim4[:5] != (4,) + o3 + (nt,) or pix4[4] != np.float32(tr) or pix4[:4] != struct.unpack_from('<4f', alone[0], 76):
        print('FAIL: --batch-axis %s: dim %s pixdim %s, want dim %s pixdim[4] %g' % (ax, dim4, pix4, o3 + (nt,), tr))
        ok = False
    # the header beyond dim/pixdim (vox_offset, codes, quaternion, offsets, sform) as the 3-D output's
    if d4[108:348] != alone[0][108:348]:
        print('FAIL: --batch-axis %s: the header differs from the 3-D output\'s' % ax); ok = False
    got = np.frombuffer(d4[vox4:], np.float32).reshape(o3 + (nt,), order='F')
    for k in range(nt):
        want = np.frombuffer(alone[k][vox3:], np.float32).reshape(o3, order='F')
        if not np.array_equal(got[..., k], want):
            print('FAIL: --batch-axis %s: time point %d differs from its 3-D resample' % (ax, k)); ok = False
print('resample 4-D --batch-axis: %s' % ('ok' if ok else 'FAILED'))
for bad_args, want_rc in ((['--spacing', '1'], 1), (['--spacing', '1', '--batch-axis', '0'], 1),
                          (['--spacing', '1', '--batch-axis', '3', '--batch-dims', '1'], 2),
                          (['--spacing', '1,1', '--batch-axis', '3'], 2), (['--spacing', '1', '--batch-axis', '4'], 1)):
    r = subprocess.run([cli, 'run', 'resample', 'in4.nii', 'bad.nii'] + bad_args, capture_output=True, text=True)
    import os
    if r.returncode != want_rc or os.path.exists('bad.nii') or len(r.stderr.strip().splitlines()) != 1:
        print('FAIL: resample 4-D %s exited %d (want %d): %s' % (' '.join(bad_args), r.returncode, want_rc, r.stderr.strip()))
        ok = False
sys.exit(0 if ok else 1)
PY
if "$py" resample.py "$cli"; then npass=$((npass + 1)); else fail "resample"; fi
cli_summary
