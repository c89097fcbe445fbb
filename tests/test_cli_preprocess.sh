#!/usr/bin/env bash
# test_cli_preprocess.sh -- end-to-end tests of `ndforge preprocess`.
#
#   tests/test_cli_preprocess.sh path/to/ndforge SCRATCH_DIR
#
# Small volumes (ch2 of mricron-data taken every 4th voxel when it is
# installed; synthetic ones with known affines: flipped, permuted, oblique,
# scaled int16) go through every step; nibabel reads the outputs:
#   reorient   voxels and affine equal nibabel's as_closest_canonical (--format nii)
#   resample   a linear ramp sampled where the geometry says (o r + t), the
#              affine maps each output voxel to the input's world point
#   crop       a bright box found by the foreground mask, cut with its margin,
#              the affine moved to the crop's first voxel
#   normalize  CT window to [-1, 1] and MRI z-scores by their formulas
#   the header's sform and qform agree with the JSON report's affine; the PNG
#   montage decodes (zlib, by hand) to the expected size; the report has its
#   fields; a bad input among good ones is reported, the others written, and
#   the exit status is 1; 4-D inputs (time last, or --time-axis 0) are
#   processed per volume and written back as 4-D; --reference gives SSIM 1
#   against itself and a fourth montage panel, one of another shape a warning
#   naming both shapes in the report and on stderr; --workers 1 and 3 write the
#   same bytes, print the same stderr and report in input order, with the
#   report's timing; a .nii.gz output decompresses to the .nii output's bytes
#   (extensions kept); a two-member .nii.gz input and one with bytes after
#   its data read, a truncated one fails; --gpu-memory-limit below a volume's
#   needs: on a GPU every volume retried on the CPU, on the CPU nothing changes,
#   and the outputs are a --device cpu run's bytes; bad command lines exit 2.
# Exits 77 without numpy and nibabel.
set -u
. "$(dirname "$0")/cli_common.sh"
cli_setup preprocess "numpy, nibabel" "$@"

cat > check.py <<'PY'
import json, os, struct, subprocess, sys, zlib
import numpy as np, nibabel as nib

cli = sys.argv[1]
rng = np.random.default_rng(3)
bad = []
def fail(msg):
    print('FAIL: ' + msg); bad.append(msg)

def run(args, want_rc=0):
    r = subprocess.run([cli, 'preprocess'] + args + ['--progress', 'lines'], capture_output=True, text=True)
    if r.returncode != want_rc:
        fail('preprocess %s exited %d, expected %d: %s' % (' '.join(args), r.returncode, want_rc, r.stderr.strip()))
    return r

def png_size(path):
    """(width, height) of an 8-bit RGB PNG, checking its chunks' CRCs and the image data's length."""
    b = open(path, 'rb').read()
    assert b[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG signature'
    pos, idat, w = 8, b'', None
    while pos < len(b):
        n, kind = struct.unpack('>I4s', b[pos:pos + 8])
        data = b[pos + 8:pos + 8 + n]
        crc, = struct.unpack('>I', b[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + data) == crc, 'bad CRC in ' + kind.decode()
        if kind == b'IHDR':
            w, h, depth, ctype = struct.unpack('>IIBB', data[:10])
            assert depth == 8 and ctype == 2, 'not 8-bit RGB'
        elif kind == b'IDAT':
            idat += data
        pos += 12 + n
    raw = zlib.decompress(idat)
    assert len(raw) == h * (1 + 3 * w), 'image data of %d bytes for %dx%d' % (len(raw), w, h)
    return w, h

def rot(ax, deg):
    c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
    i, j = [k for k in range(3) if k != ax]
    m = np.eye(3); m[i, i] = c; m[j, j] = c; m[i, j] = -s; m[j, i] = s
    return m

def affine(lin, t):
    a = np.eye(4); a[:3, :3] = lin; a[:3, 3] = t
    return a

def smooth(shape):
    g = np.meshgrid(*[np.linspace(0, 3, n) for n in shape], indexing='ij')
    return 100 + 40 * np.sin(g[0]) * np.cos(g[1]) + 10 * g[2] + rng.normal(size=shape)

os.makedirs('in', exist_ok=True)
vols = {}
sh = (20, 24, 16)
vols['las'] = (smooth(sh).astype(np.float32), affine(np.diag([-1.2, 1.0, 1.5]), [30, -20, -10]))
perm = np.array([[0, 0, 1.1], [-0.9, 0, 0], [0, 1.3, 0]])            # voxel axes permuted and flipped
vols['perm'] = (smooth(sh).astype(np.float32), affine(perm, [5, 40, -7]))
vols['oblique'] = (smooth(sh).astype(np.float32), affine(rot(0, 25) @ rot(2, -15) @ np.diag([1, 1.2, 2]), [1, 2, 3]))
ch2 = '/usr/share/mricron/templates/ch2.nii.gz'
if os.path.exists(ch2):
    c = nib.load(ch2)
    vols['ch2'] = (np.asanyarray(c.dataobj)[::4, ::4, ::4].astype(np.float32), c.affine @ np.diag([4, 4, 4, 1]))
else:
    print('note: no %s (mricron-data): ch2 not among the inputs' % ch2)
for k, (x, a) in vols.items():
    nib.save(nib.Nifti1Image(x, a), 'in/%s.nii.gz' % k)
# int16 with scl_slope/scl_inter: the reader applies them
hu = rng.integers(-1000, 1500, size=(10, 9, 8)).astype(np.int16)
img = nib.Nifti1Image(hu, affine(np.diag([-0.8, -0.8, 2.5]), [0, 0, 0]))
img.header.set_slope_inter(2.0, -1024.0)
nib.save(img, 'in/ct.nii.gz')
hu_true = hu.astype(np.float64) * 2.0 - 1024.0
with open('in/broken.nii.gz', 'wb') as f:
    f.write(b'this is not a NIfTI file')

def canon(path):
    c = nib.as_closest_canonical(nib.load(path))
    return np.asarray(c.get_fdata(), dtype=np.float32), c.affine

def load(path):
    o = nib.load(path)
    return np.asanyarray(o.dataobj), o.affine, o.header

def header_agrees(path, rep_affine, what):
    o = nib.load(path)
    s, q = o.header.get_sform(), o.header.get_qform()
    if not np.allclose(s, np.reshape(rep_affine, (4, 4)), atol=1e-4):
        fail('%s: sform %s, the report %s' % (what, s.tolist(), rep_affine))
    if not np.allclose(q, s, atol=1e-4):
        fail('%s: qform %s differs from the sform %s' % (what, q.tolist(), s.tolist()))

# 1. every step over the directory, one broken input: exit 1, the others written
r = run(['in', '--out', 'out1', '--steps', 'reorient,resample,foreground,normalize,crop', '--spacing', '1.5'], 1)
rep = json.load(open('out1/report.json'))
for key in ('tool', 'version', 'device', 'steps', 'volumes', 'failed', 'wall_s'):
    if key not in rep: fail('report: no %r' % key)
if rep.get('failed') != 1: fail('report: failed=%r, expected 1' % rep.get('failed'))
if rep.get('steps') != ['reorient', 'resample', 'foreground', 'normalize', 'crop']: fail('report steps %r' % rep.get('steps'))
names = sorted(os.path.basename(v['input']) for v in rep['volumes'])
want = sorted(['%s.nii.gz' % k for k in vols] + ['ct.nii.gz', 'broken.nii.gz'])
if names != want: fail('report volumes %s, expected %s' % (names, want))
for v in rep['volumes']:
    stem = os.path.basename(v['input'])[:-len('.nii.gz')]
    if stem == 'broken':
        if v['status'] != 'failed' or 'broken' not in v.get('error', ''): fail('broken input reported as %r' % v)
        if os.path.exists('out1/broken.nii.gz'): fail('an output for the broken input')
        continue
    if v['status'] != 'ok': fail('%s: %s' % (stem, v.get('error'))); continue
    for key in ('output', 'montage', 'shape', 'affine', 'device', 'read_s', 'process_s', 'write_s', 'wall_s', 'steps'):
        if key not in v: fail('%s: report has no %r' % (stem, key))
    if [s['name'] for s in v['steps']] != rep['steps']: fail('%s: steps %r' % (stem, v['steps']))
    for s in v['steps']:
        for key in ('status', 'wall_s', 'device', 'params', 'metrics'):
            if key not in s: fail('%s/%s: no %r' % (stem, s.get('name'), key))
    data, aff, hdr = load('out1/%s.nii.gz' % stem)
    if list(data.shape) != v['shape'] or data.dtype != np.float32: fail('%s: %s %s, report %s' % (stem, data.dtype, data.shape, v['shape']))
    header_agrees('out1/%s.nii.gz' % stem, v['affine'], stem)
    # the affine from the steps' geometry: as_closest_canonical, resample (centres aligned), crop's start
    c_data, c_aff = canon('in/%s.nii.gz' % stem)
    sp = np.sqrt((c_aff[:3, :3] ** 2).sum(0))
    n = np.array(c_data.shape)
    n_out = np.array([max(1, round(n[d] * sp[d] / 1.5)) for d in range(3)])
    rr = 1.5 / sp
    tt = (n - 1) / 2 - (n_out - 1) / 2 * rr
    m = np.eye(4); m[:3, :3] = np.diag(rr); m[:3, 3] = tt
    start = v['steps'][4]['metrics']['start']
    t = np.eye(4); t[:3, 3] = start
    want_aff = c_aff @ m @ t
    if not np.allclose(aff, want_aff, atol=1e-3): fail('%s: affine %s, expected %s' % (stem, aff.tolist(), want_aff.tolist()))
    if not np.allclose(np.abs(aff[:3, :3]), np.diag([1.5] * 3), atol=1e-3) and stem != 'oblique':
        fail('%s: not 1.5 mm RAS+: %s' % (stem, aff.tolist()))
    w, h = png_size('out1/%s.png' % stem)
    X, Y, Z = data.shape
    if (w, h) != (X + X + Y + 8, max(Y, Z)): fail('%s: montage %dx%d for a %s volume' % (stem, w, h, data.shape))
print('run 1 (all steps, a broken input) checked')

# 2. reorient alone: nibabel's voxels and affine exactly
run(['in/las.nii.gz', 'in/perm.nii.gz', 'in/oblique.nii.gz', 'in/ct.nii.gz', '--out', 'out2', '--steps', 'reorient',
     '--no-montage', '--format', 'nii', '--io-threads', '3'])
for stem in ('las', 'perm', 'oblique', 'ct'):
    data, aff, _ = load('out2/%s.nii' % stem)
    c_data, c_aff = canon('in/%s.nii.gz' % stem)
    if stem == 'ct': c_data = np.asarray(nib.as_closest_canonical(nib.Nifti1Image(hu_true.astype(np.float32), nib.load('in/ct.nii.gz').affine)).dataobj)
    if data.shape != c_data.shape or not np.array_equal(data, c_data): fail('reorient %s: voxels differ from nibabel' % stem)
    if not np.allclose(aff, c_aff, atol=1e-4): fail('reorient %s: affine %s, nibabel %s' % (stem, aff.tolist(), c_aff.tolist()))
    if os.path.exists('out2/%s.png' % stem): fail('--no-montage wrote a montage')
print('run 2 (reorient against as_closest_canonical) checked')

# 3. resample a linear ramp: values at o r + t, world points kept
g = np.meshgrid(*[np.arange(k, dtype=np.float64) for k in (11, 13, 9)], indexing='ij')
ramp = (3 * g[0] - 2 * g[1] + 0.5 * g[2] + 7).astype(np.float32)
a_in = affine(np.diag([1.0, 2.0, 3.0]), [-4, 5, 6])
nib.save(nib.Nifti1Image(ramp, a_in), 'ramp.nii.gz')
run(['ramp.nii.gz', '--out', 'out3', '--steps', 'resample', '--spacing', '0.7,1.5,2.2', '--order', '1'])
data, aff, _ = load('out3/ramp.nii.gz')
S, s0, n = np.array([0.7, 1.5, 2.2]), np.array([1.0, 2.0, 3.0]), np.array(ramp.shape)
n_out = np.array([max(1, round(n[d] * s0[d] / S[d])) for d in range(3)])
if tuple(n_out) != data.shape: fail('resample shape %s, expected %s' % (data.shape, tuple(n_out)))
else:
    rr, tt = S / s0, (n - 1) / 2 - (n_out - 1) / 2 * S / s0
    o = np.stack(np.meshgrid(*[np.arange(k) for k in n_out], indexing='ij'), -1).reshape(-1, 3)
    ci = o * rr + tt
    inside = np.all((ci >= 0) & (ci <= n - 1), axis=1)
    want = 3 * ci[:, 0] - 2 * ci[:, 1] + 0.5 * ci[:, 2] + 7
    got = data.reshape(-1)
    if not np.allclose(got[inside], want[inside], atol=1e-3): fail('resample: the ramp is not sampled at o r + t')
    world_out = (aff @ np.c_[o, np.ones(len(o))].T).T[:, :3]
    world_in = (a_in @ np.c_[ci, np.ones(len(o))].T).T[:, :3]
    if not np.allclose(world_out, world_in, atol=1e-3): fail('resample: world points moved')
    cen_in = a_in @ np.r_[(n - 1) / 2, 1]
    cen_out = aff @ np.r_[(n_out - 1) / 2, 1]
    if not np.allclose(cen_in, cen_out, atol=1e-4): fail('resample: centres %s %s' % (cen_in, cen_out))
print('run 3 (resample) checked')

# 4. crop to a bright box with a margin; normalize CT and MRI by their formulas
box = np.zeros((30, 25, 20), np.float32) + rng.uniform(0, 1, size=(30, 25, 20)).astype(np.float32)
box[5:20, 6:16, 3:12] = 1000  # 9% of the voxels: above the 98th percentile's share
a_box = affine(rot(1, 10) @ np.diag([0.9, 1.1, 1.3]), [10, 20, 30])
nib.save(nib.Nifti1Image(box, a_box), 'box.nii.gz')
run(['box.nii.gz', '--out', 'out4', '--steps', 'foreground,crop', '--margin', '2,3,30'])
data, aff, _ = load('out4/box.nii.gz')
if data.shape != (19, 16, 20) or not np.array_equal(data, box[3:22, 3:19, 0:20]): fail('crop: %s' % (data.shape,))
if not np.allclose(aff, a_box @ np.array([[1, 0, 0, 3], [0, 1, 0, 3], [0, 0, 1, 0], [0, 0, 0, 1.0]]), atol=1e-4):
    fail('crop: affine %s' % aff.tolist())
run(['in/ct.nii.gz', '--out', 'out5', '--steps', 'normalize', '--modality', 'ct', '--preset', 'bone'])
data, _, _ = load('out5/ct.nii.gz')
lo, hi = 400 - 900, 400 + 900
want = (np.clip(hu_true, lo, hi) - lo) / (hi - lo) * 2 - 1
if not np.allclose(data, want, atol=1e-6): fail('normalize ct: max error %g' % np.abs(data - want).max())
run(['in/las.nii.gz', '--out', 'out6', '--steps', 'normalize', '--modality', 'mri', '--no-montage'])
data, _, _ = load('out6/las.nii.gz')
x = vols['las'][0].astype(np.float64)
want = (x - x.mean()) / x.std()
if not np.allclose(data, want, atol=1e-5): fail('normalize mri: max error %g' % np.abs(data - want).max())
run(['in/las.nii.gz', '--out', 'out7', '--steps', 'crop'], 1)
if 'no mask' not in json.load(open('out7/report.json'))['volumes'][0].get('error', ''): fail('crop without a mask: no reason given')
print('run 4 (crop, normalize) checked')

# 5. 4-D inputs: time last (NIfTI's default) and time first (--time-axis 0)
x4 = rng.normal(size=(8, 7, 6, 3)).astype(np.float32)
a4 = affine(np.diag([-2, 1, 1.5]), [0, 0, 0])
nib.save(nib.Nifti1Image(x4, a4), 'four.nii.gz')
run(['four.nii.gz', '--out', 'out8', '--steps', 'reorient,resample', '--spacing', '2', '--order', '0'])
data, aff, _ = load('out8/four.nii.gz')
c = nib.as_closest_canonical(nib.Nifti1Image(x4, a4))
cd = np.asarray(c.dataobj)
if data.shape != (8, 4, 4, 3): fail('4-D: shape %s' % (data.shape,))
else:
    for t in range(3):
        o = np.stack(np.meshgrid(*[np.arange(k) for k in data.shape[:3]], indexing='ij'), -1).reshape(-1, 3)
        rr = 2 / np.array([2, 1, 1.5]); n = np.array(cd.shape[:3]); n_out = np.array(data.shape[:3])
        ci = np.clip(np.floor(o * rr + (n - 1) / 2 - (n_out - 1) / 2 * rr + 0.5).astype(int), 0, n - 1)
        if not np.array_equal(data[..., t].reshape(-1), cd[ci[:, 0], ci[:, 1], ci[:, 2], t]): fail('4-D: time point %d' % t)
x4f = np.ascontiguousarray(np.moveaxis(x4, 3, 0))
nib.save(nib.Nifti1Image(x4f, np.eye(4)), 'four_first.nii.gz')
run(['four_first.nii.gz', '--out', 'out9', '--steps', 'normalize', '--time-axis', '0'])
data, _, _ = load('out9/four_first.nii.gz')
for t in range(3):
    v = x4f[t].astype(np.float64)
    if data.shape != x4f.shape or not np.allclose(data[t], (v - v.mean()) / v.std(), atol=1e-5): fail('4-D --time-axis 0: time point %d' % t)
print('run 5 (4-D) checked')

# 6. --reference: SSIM of a z-scored volume z-scored again against itself is 1, and the montage has a fourth panel
run(['out6/las.nii.gz', '--out', 'out10', '--steps', 'normalize', '--reference', 'out6/las.nii.gz'])
rep = json.load(open('out10/report.json'))
v = rep['volumes'][0]
if v['status'] != 'ok' or abs(v.get('ssim', 0) - 1) > 1e-4: fail('--reference: %r' % v)
w, h = png_size('out10/las.png')
X, Y, Z = load('out10/las.nii.gz')[0].shape
if (w, h) != (X + X + Y + X + 12, max(Y, Z)): fail('--reference montage %dx%d' % (w, h))
# a reference of another shape: "ssim": null, and a warning naming the volume and both shapes in the
# report and on stderr (one line), the run's status 0
r = run(['out6/las.nii.gz', 'in/perm.nii.gz', '--out', 'out10b', '--steps', 'normalize', '--reference', 'in/ct.nii.gz'])
rep = json.load(open('out10b/report.json'))
lines = [l for l in r.stderr.splitlines() if 'warning' in l]
for v in rep['volumes']:
    shp = 'x'.join(str(n) for n in load(v['output'])[0].shape)
    want = [l for l in lines if l.startswith('ndforge: %s: warning: ' % v['input'])]
    if v['status'] != 'ok' or v.get('ssim', 0) is not None or '10x9x8' not in v.get('warning', '') or shp not in v['warning']:
        fail('--reference of another shape: %r' % v)
    if len(want) != 1 or '10x9x8' not in want[0] or shp not in want[0]:
        fail('--reference of another shape: stderr %r for %s (output %s)' % (r.stderr, v['input'], shp))
if len(lines) != 2: fail('--reference of another shape: %d warning lines on stderr: %r' % (len(lines), r.stderr))
print('run 6 (reference) checked')

# 7. workers: every volume the same whatever their number; errors, progress and report in input order;
#    the report's timing.  .nii.gz outputs are the .nii bytes compressed (header and extensions included),
#    and a .nii.gz of two gzip members reads as one
import gzip
x = vols['las'][0]
e = nib.Nifti1Image(x, vols['las'][1])
e.header.extensions.append(nib.nifti1.Nifti1Extension('comment', b'an extension the outputs keep'))
nib.save(e, 'in/ext.nii.gz')
raw = gzip.decompress(open('in/perm.nii.gz', 'rb').read())
with open('in/members.nii.gz', 'wb') as f:
    f.write(gzip.compress(raw[:1000]) + gzip.compress(raw[1000:]))
with open('in/trailing.nii.gz', 'wb') as f:  # bytes after the data: read by the zlib reader
    f.write(gzip.compress(raw + bytes(100)))
with open('in/truncated.nii.gz', 'wb') as f:
    f.write(open('in/oblique.nii.gz', 'rb').read()[:-100])
steps = ['--steps', 'reorient,resample,foreground,normalize,crop', '--spacing', '1.5']
r1 = run(['in', '--out', 'w1', '--workers', '1'] + steps, 1)
r3 = run(['in', '--out', 'w3', '--workers', '3', '--cpu-threads', '1', '--io-threads', '2'] + steps, 1)
rn = run(['in', '--out', 'wn', '--workers', '2', '--format', 'nii', '--no-montage'] + steps, 1)
if r1.stderr != r3.stderr: fail('--workers 3: stderr differs from --workers 1:\n%s\n%s' % (r1.stderr, r3.stderr))
rep1, rep3 = json.load(open('w1/report.json')), json.load(open('w3/report.json'))
if [v['input'] for v in rep1['volumes']] != [v['input'] for v in rep3['volumes']]: fail('--workers 3: report order')
if rep3.get('workers') != 3 or rep3.get('cpu_threads') != 1: fail('report: workers %r, cpu_threads %r' % (rep3.get('workers'), rep3.get('cpu_threads')))
tm = rep3.get('timing', {})
for key in ('startup_s', 'read', 'process', 'write', 'steps_sum_s', 'workers'):
    if key not in tm: fail('report timing: no %r' % key)
for ph in ('read', 'process', 'write'):
    p = tm.get(ph, {})
    if not all(k in p for k in ('sum_s', 'span_s', 'concurrency', 'last_end_s')) or p['span_s'] > p['sum_s'] + 1e-3:
        fail('report timing %s: %r' % (ph, p))
if sorted(w['worker'] for w in tm.get('workers', [])) != [0, 1, 2] or sum(w['volumes'] for w in tm['workers']) != len(rep3['volumes']):
    fail('report timing workers: %r' % tm.get('workers'))
def same(a, b):
    """The same NIfTI bytes; on a GPU, whose float reductions may round otherwise from run to run,
    the same header and data within 1e-5."""
    if a == b: return True
    if not rep1['device'].startswith('cuda') or len(a) != len(b): return False
    off = int(struct.unpack('<f', a[108:112])[0])
    return a[:off] == b[:off] and np.allclose(np.frombuffer(a[off:], np.float32), np.frombuffer(b[off:], np.float32),
                                              rtol=1e-5, atol=1e-5)
for v1, v3, vn in zip(rep1['volumes'], rep3['volumes'], json.load(open('wn/report.json'))['volumes']):
    stem = os.path.basename(v1['input'])[:-len('.nii.gz')]
    if v1['status'] != v3['status'] or v1['status'] != vn['status']: fail('%s: status %s, %s' % (stem, v1['status'], v3['status'])); continue
    if stem in ('broken', 'truncated'):
        if v1['status'] != 'failed' or (stem == 'truncated' and 'truncated' not in v1.get('error', '')): fail('%s: %r' % (stem, v1))
        continue
    if v1['status'] != 'ok': fail('%s: %s' % (stem, v1.get('error'))); continue
    if not (0 <= v3['worker'] < 3) or not all(v3[k][0] <= v3[k][1] for k in ('read_at', 'process_at', 'write_at')):
        fail('%s: worker %r, spans %r %r %r' % (stem, v3['worker'], v3['read_at'], v3['process_at'], v3['write_at']))
    if any('start_s' not in s for s in v3['steps']): fail('%s: a step without start_s' % stem)
    b1 = gzip.decompress(open('w1/%s.nii.gz' % stem, 'rb').read())
    if not same(b1, gzip.decompress(open('w3/%s.nii.gz' % stem, 'rb').read())): fail('%s: --workers 3 wrote other bytes' % stem)
    if not same(b1, open('wn/%s.nii' % stem, 'rb').read()): fail('%s: the .nii.gz holds other bytes than the .nii' % stem)
o = nib.load('w3/ext.nii.gz')
if [bytes(x.get_content()).rstrip(b'\0') for x in o.header.extensions] != [b'an extension the outputs keep']:
    fail('ext: extensions %r' % o.header.extensions)
perm_out = open('wn/perm.nii', 'rb').read()
if not same(open('wn/members.nii', 'rb').read(), perm_out): fail('a .nii.gz of two gzip members read otherwise')
if not same(open('wn/trailing.nii', 'rb').read(), perm_out): fail('a .nii.gz with bytes after its data read otherwise')
print('run 7 (workers, .nii.gz bytes) checked')

# 8. --gpu-memory-limit: on a GPU, a limit below one volume's arrays makes every volume run out of GPU
#    memory and run again on the CPU, writing what a --device cpu run writes; on the CPU the limit is
#    accepted and changes nothing
steps8 = ['--steps', 'reorient,resample,foreground,normalize,crop', '--spacing', '1.5', '--no-montage']
ins8 = ['in/las.nii.gz', 'in/perm.nii.gz', 'in/oblique.nii.gz']
run(ins8 + ['--out', 'l_cpu', '--device', 'cpu'] + steps8)
run(ins8 + ['--out', 'l_lim', '--gpu-memory-limit', '16K', '--workers', '2'] + steps8)
rl = json.load(open('l_lim/report.json'))
gpu = rl['device'].startswith('cuda')
for v in rl['volumes']:
    stem = os.path.basename(v['input'])[:-len('.nii.gz')]
    if v['status'] != 'ok' or v['retried_on_cpu'] != gpu or (gpu and v['device'] != 'cpu'):
        fail('--gpu-memory-limit 16K on %s: %s: %r' % (rl['device'], stem, {k: v.get(k) for k in ('status', 'error', 'device', 'retried_on_cpu')}))
        continue
    if gzip.decompress(open('l_lim/%s.nii.gz' % stem, 'rb').read()) != gzip.decompress(open('l_cpu/%s.nii.gz' % stem, 'rb').read()):
        fail('--gpu-memory-limit 16K: %s differs from the --device cpu run' % stem)
print('run 8 (--gpu-memory-limit on %s) checked' % rl['device'])
sys.exit(1 if bad else 0)
PY
if "$py" check.py "$cli"; then npass=$((npass + 1)); else fail "preprocess runs"; fi

# Bad command lines exit 2 and write nothing.
for args in "--steps reorient,nosuchstep in --out o" "--spacing 0 in --out o" "--modality pet in --out o" \
            "in" "--out o" "--preset nosuch in --out o" "--centre 40 in --out o" "--nosuch in --out o" \
            "--workers 0 in --out o" "--cpu-threads -1 in --out o" "--gpu-memory-limit 0 in --out o" \
            "--gpu-memory-limit 12Q in --out o" "--gpu-memory-limit -1M in --out o" "--gpu-memory-limit M in --out o" \
            "--gpu-memory-limit 1e30 in --out o" "--gpu-memory-limit 0x10 in --out o"; do
  # shellcheck disable=SC2086
  "$cli" preprocess $args >/dev/null 2>err.txt
  rc=$?
  if [ "$rc" -ne 2 ] || [ ! -s err.txt ] || [ -e o ]; then fail "preprocess $args: exit $rc, expected 2 with a message"; else npass=$((npass + 1)); fi
done
# a size followed by a space is no size (a space's byte masked to upper case is the NUL that ends "KMGT")
for size in "1 " "1 B" "512 "; do
  "$cli" preprocess --gpu-memory-limit "$size" in --out o >/dev/null 2>err.txt
  rc=$?
  if [ "$rc" -ne 2 ] || [ ! -s err.txt ] || [ -e o ]; then fail "preprocess --gpu-memory-limit '$size': exit $rc, expected 2"; else npass=$((npass + 1)); fi
done
"$cli" preprocess --help | grep -q "^  reorient" && npass=$((npass + 1)) || fail "preprocess --help lists no steps"
cli_summary
