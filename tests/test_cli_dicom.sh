#!/usr/bin/env bash
# test_cli_dicom.sh -- `ndforge convert` with DICOM series and NIfTI.
#
#   tests/test_cli_dicom.sh path/to/ndforge SCRATCH_DIR
#
# DICOM series are written here with pydicom (independently of ndforge's own
# GDCM writer) from Debian's real T1 MRI ch2.nii.gz (mricron-data; a random
# volume of that size stands in without it): the axial volume as it is, an
# oblique crop with another spacing and shuffled file names, and CT-like
# series with RescaleSlope / RescaleIntercept (also JPEG-LS compressed, with
# GDCM's gdcmconv where it is installed), an enhanced MR file (one file,
# frames in shuffled order).  `ndforge convert` to NIfTI must give the
# source's voxels (after the rescaling, in the documented dtype) and its
# affine to 1e-4 mm, read back with nibabel.  Each refusal (missing slice,
# uneven gap, two series without --series, orientation or pixel spacing that
# differs between slices) exits 1 with a message naming a file of the
# series; --series picks one of two series; `ndforge run` reads a series
# directory.  Round trips: NIfTI -> DICOM (ndforge's writer) -> NIfTI gives
# the voxels and affine back (the scaled values of a NIfTI with scl_slope),
# and a 4-D NIfTI converted to NIfTI keeps its header.  Exits 77 without a
# python3 that has numpy, pydicom and nibabel.
set -u
. "$(dirname "$0")/cli_common.sh"
cli_setup dicom "numpy, pydicom, nibabel" "$@"

cat > dicom.py <<'PY'
import os, shutil, struct, subprocess, sys, time
import numpy as np, nibabel as nib, pydicom
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

cli = sys.argv[1]
rng = np.random.default_rng(33)
npass = nfail = 0

def check(name, ok, why=''):
    global npass, nfail
    if ok:
        npass += 1
    else:
        nfail += 1
        print('FAIL: %s%s' % (name, ': ' + why if why else ''))

def run(*args):
    r = subprocess.run([cli, 'convert'] + [str(a) for a in args], capture_output=True, text=True)
    return r.returncode, r.stderr

CH2 = '/usr/share/mricron/templates/ch2.nii.gz'
if os.path.exists(CH2):
    src = nib.load(CH2)
    vol = np.asanyarray(src.dataobj)
    aff = src.affine
else:
    print('note: %s missing (mricron-data); a random volume stands in' % CH2)
    vol = rng.integers(0, 256, size=(181, 217, 181)).astype(np.uint8)
    aff = np.array([[1, 0, 0, -90], [0, 1, 0, -126], [0, 0, 1, -72], [0, 0, 0, 1.0]])
    nib.Nifti1Image(vol, aff).to_filename('ch2.nii.gz')
    CH2 = 'ch2.nii.gz'

LPS = np.diag([-1.0, -1.0, 1.0])

def ds_(x):
    """A DS string: at most 16 characters, as precise as fits."""
    for p in range(16, 0, -1):
        t = '%.*g' % (p, x)
        if len(t) <= 16:
            return t

def write_series(d, v, A, stored=None, slope=None, inter=None, names=None, series_uid=None, descr='test',
                 number=1, tweak=None):
    """One file per z slice of v (x, y, z), geometry from the RAS affine A."""
    os.makedirs(d, exist_ok=True)
    stored = v if stored is None else stored
    M = LPS @ A[:3, :3]
    t = LPS @ A[:3, 3]
    col = np.linalg.norm(M, axis=0)
    r, c = M[:, 0] / col[0], M[:, 1] / col[1]
    series_uid = series_uid or generate_uid()
    study, frame = generate_uid(), generate_uid()
    nz = v.shape[2]
    names = names or ['s%04d.dcm' % k for k in range(nz)]
    sgn = stored.dtype.kind == 'i'
    bits = 8 if stored.dtype.itemsize == 1 else 16
    for k in range(nz):
        fm = FileMetaDataset()
        fm.MediaStorageSOPClassUID = '1.2.840.10008.5.1.4.1.1.4'
        fm.MediaStorageSOPInstanceUID = generate_uid()
        fm.TransferSyntaxUID = ExplicitVRLittleEndian
        ds = Dataset()
        ds.file_meta = fm
        ds.is_little_endian, ds.is_implicit_VR = True, False
        ds.SOPClassUID, ds.SOPInstanceUID = fm.MediaStorageSOPClassUID, fm.MediaStorageSOPInstanceUID
        ds.Modality = 'CT' if slope is not None else 'MR'
        ds.StudyInstanceUID, ds.SeriesInstanceUID, ds.FrameOfReferenceUID = study, series_uid, frame
        ds.SeriesNumber, ds.InstanceNumber, ds.SeriesDescription = number, k + 1, descr
        ds.ImagePositionPatient = [ds_(x) for x in (t + M[:, 2] * k)]
        ds.ImageOrientationPatient = [ds_(x) for x in np.concatenate([r, c])]
        ds.PixelSpacing = [ds_(col[1]), ds_(col[0])]
        ds.SliceThickness = ds_(col[2])
        ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, 'MONOCHROME2'
        ds.Rows, ds.Columns = v.shape[1], v.shape[0]
        ds.BitsAllocated, ds.BitsStored, ds.HighBit = 16, bits, bits - 1
        ds.PixelRepresentation = 1 if sgn else 0
        if slope is not None:
            ds.RescaleSlope, ds.RescaleIntercept = '%g' % slope, '%g' % inter
        plane = np.ascontiguousarray(stored[:, :, k].T).astype('<i2' if sgn else '<u2')
        ds.PixelData = plane.tobytes()
        if tweak:
            tweak(k, ds)
        ds.save_as(os.path.join(d, names[k]), write_like_original=False)
    return series_uid

def same_volume(name, out, want, A, dtype=None):
    img = nib.load(out)
    got = np.asanyarray(img.dataobj)
    if got.shape != want.shape or not np.array_equal(got, want):
        check(name + ': voxels', False, 'shape %s vs %s, %s' % (got.shape, want.shape, 'max diff %g' % np.abs(
            got.astype(float) - want.astype(float)).max() if got.shape == want.shape else ''))
    else:
        check(name + ': voxels', True)
    if dtype is not None:
        check(name + ': dtype', got.dtype == dtype, '%s, want %s' % (got.dtype, dtype))
    h = img.header
    for form, M, code in (('sform', h.get_sform(), h['sform_code']), ('qform', h.get_qform(), h['qform_code'])):
        err = np.abs(M - A).max()
        check('%s: %s' % (name, form), code == 1 and err <= 1e-4, 'code %d, max difference %g mm' % (code, err))

# 1. ch2 as an axial series, voxels and affine back; the acceptance timing.
write_series('ax', vol, aff)
t0 = time.perf_counter()
rc, err = run('ax', 'ax.nii.gz')
t1 = time.perf_counter()
check('ch2 series -> NIfTI', rc == 0, err)
if rc == 0:
    same_volume('ch2', 'ax.nii.gz', vol, aff, np.uint8)
print('DICOM series of ch2 (%d files) -> NIfTI: %.3f s' % (vol.shape[2], t1 - t0))
rc, err = run('ax', 'ax.npy')
check('ch2 series -> .npy', rc == 0 and np.array_equal(np.load('ax.npy'), vol), err)
# `ndforge run` reads a series directory too; its NIfTI output carries the series' affine.
r = subprocess.run([cli, 'run', 'grey_erosion', '--size', '3', '--device', 'cpu', 'ax', 'ax_eroded.nii.gz'],
                   capture_output=True, text=True)
check('run grey_erosion on a series', r.returncode == 0, r.stderr)
if r.returncode == 0:
    e = nib.load('ax_eroded.nii.gz')
    check('run on a series: affine', np.abs(e.affine - aff).max() <= 1e-4 and e.header['sform_code'] == 1,
          str(e.affine))
files = sorted(os.listdir('ax'))
rc, err = run(*(['ax/' + f for f in files[::-1]] + ['files.nii']))
check('ch2 as a list of files', rc == 0, err)
if rc == 0:
    same_volume('list of files', 'files.nii', vol, aff)

# 2. Oblique, anisotropic, shuffled names.
ang = rng.uniform(-0.5, 0.5, 3)
def rot(a, b, c):
    Rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    Ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    Rz = np.array([[np.cos(c), -np.sin(c), 0], [np.sin(c), np.cos(c), 0], [0, 0, 1]])
    return Rx @ Ry @ Rz
obl = np.ascontiguousarray(vol[20:150:2, 30:180:2, 40:120:3])
Aobl = np.eye(4)
Aobl[:3, :3] = rot(*ang) @ np.diag([0.9, 1.2, 2.5])
Aobl[:3, 3] = [-37.25, 12.5, 80.125]
nz = obl.shape[2]
perm = rng.permutation(nz)
write_series('obl', obl, Aobl, names=['x%03d' % perm[k] for k in range(nz)])
rc, err = run('obl', 'obl.nii.gz')
check('oblique series -> NIfTI', rc == 0, err)
if rc == 0:
    same_volume('oblique', 'obl.nii.gz', obl, Aobl)

# 2b. The oblique volume as one enhanced MR file: frames in shuffled order, the
#     orientation and spacing shared, each frame's position its own, a rescale.
from pydicom.sequence import Sequence
def item(**kw):
    d = Dataset()
    for k, v in kw.items():
        setattr(d, k, v)
    return d
M = LPS @ Aobl[:3, :3]
t = LPS @ Aobl[:3, 3]
col = np.linalg.norm(M, axis=0)
fm = FileMetaDataset()
fm.MediaStorageSOPClassUID = '1.2.840.10008.5.1.4.1.1.4.1'  # Enhanced MR Image Storage
fm.MediaStorageSOPInstanceUID = generate_uid()
fm.TransferSyntaxUID = ExplicitVRLittleEndian
e = Dataset()
e.file_meta = fm
e.is_little_endian, e.is_implicit_VR = True, False
e.SOPClassUID, e.SOPInstanceUID = fm.MediaStorageSOPClassUID, fm.MediaStorageSOPInstanceUID
e.Modality, e.StudyInstanceUID, e.SeriesInstanceUID, e.SeriesNumber = 'MR', generate_uid(), generate_uid(), 1
e.NumberOfFrames = nz
e.SamplesPerPixel, e.PhotometricInterpretation = 1, 'MONOCHROME2'
e.Rows, e.Columns = obl.shape[1], obl.shape[0]
e.BitsAllocated, e.BitsStored, e.HighBit, e.PixelRepresentation = 16, 16, 15, 0
e.SharedFunctionalGroupsSequence = Sequence([item(
    PlaneOrientationSequence=Sequence([item(ImageOrientationPatient=[ds_(x) for x in np.concatenate(
        [M[:, 0] / col[0], M[:, 1] / col[1]])])]),
    PixelMeasuresSequence=Sequence([item(PixelSpacing=[ds_(col[1]), ds_(col[0])], SliceThickness=ds_(col[2]))]),
    PixelValueTransformationSequence=Sequence([item(RescaleSlope='2', RescaleIntercept='-5',
                                                    RescaleType='US')]))])
e.PerFrameFunctionalGroupsSequence = Sequence([item(PlanePositionSequence=Sequence([item(
    ImagePositionPatient=[ds_(x) for x in (t + M[:, 2] * k)])])) for k in perm])
e.PixelData = b''.join(np.ascontiguousarray(obl[:, :, k].T).astype('<u2').tobytes() for k in perm)
e.save_as('enhanced.dcm', write_like_original=False)
rc, err = run('enhanced.dcm', 'enhanced.nii.gz')
check('enhanced MR (multi-frame) -> NIfTI', rc == 0, err)
if rc == 0:
    same_volume('enhanced MR', 'enhanced.nii.gz', obl.astype(np.int16) * 2 - 5, Aobl, np.int16)

# 3. CT-like: stored int16 with slope 1 and intercept -1024 (int16 HU); slope 0.5 (float32).
ct = np.ascontiguousarray(vol[40:140, 50:170, 60:100]).astype(np.int16) * 8
write_series('ct', ct, aff, stored=ct, slope=1, inter=-1024)
rc, err = run('ct', 'ct.nii.gz')
check('CT series -> NIfTI', rc == 0, err)
if rc == 0:
    same_volume('CT (slope 1, intercept -1024)', 'ct.nii.gz', ct - 1024, aff, np.int16)
write_series('ctf', ct, aff, stored=ct, slope=0.5, inter=-1000.25)
rc, err = run('ctf', 'ctf.nii.gz')
check('CT series (slope 0.5) -> NIfTI', rc == 0, err)
if rc == 0:
    same_volume('CT (slope 0.5, intercept -1000.25)', 'ctf.nii.gz', (ct * 0.5 - 1000.25).astype(np.float32),
                aff, np.float32)

# 3b. The same slices JPEG-LS compressed (GDCM's gdcmconv, libgdcm-tools): the
#     decoder is GDCM's, the voxels the same.
if shutil.which('gdcmconv'):
    os.makedirs('ctj', exist_ok=True)
    ok = all(subprocess.run(['gdcmconv', '--jpegls', 'ct/' + f, 'ctj/' + f]).returncode == 0
             for f in sorted(os.listdir('ct')))
    rc, err = run('ctj', 'ctj.nii')
    check('JPEG-LS series -> NIfTI', ok and rc == 0, err)
    if ok and rc == 0:
        same_volume('JPEG-LS CT', 'ctj.nii', ct - 1024, aff, np.int16)
else:
    print('note: no gdcmconv (libgdcm-tools): the compressed series is not tested')

# 4. Refusals: exit 1, a message naming a file of the series, no output.
small = np.ascontiguousarray(vol[60:120, 60:140, 60:72])
def refused(name, d, want_files, *opts):
    if os.path.exists('bad.nii'):
        os.remove('bad.nii')
    rc, err = run(*(list(opts) + [d, 'bad.nii']))
    named = [f for f in want_files if f in err]
    check('refusal: ' + name, rc == 1 and named and not os.path.exists('bad.nii'),
          'exit %d, message %r' % (rc, err.strip()))
write_series('miss', small, aff)
os.remove('miss/s0005.dcm')
refused('missing slice', 'miss', ['miss/s0004.dcm', 'miss/s0006.dcm'])
def shift_one(k, ds):
    if k == 7:
        ds.ImagePositionPatient = [str(float(x) + (0.3 if i == 2 else 0)) for i, x in enumerate(ds.ImagePositionPatient)]
write_series('gap', small, aff, tweak=shift_one)
refused('uneven gap', 'gap', ['gap/s0007.dcm'])
def turn_one(k, ds):
    if k == 3:
        ds.ImageOrientationPatient = [ds_(x) for x in (-1, 0, 0, 0, -np.cos(0.1), np.sin(0.1))]
write_series('ori', small, aff, tweak=turn_one)
refused('inconsistent orientation', 'ori', ['ori/s0003.dcm'])
def space_one(k, ds):
    if k == 9:
        ds.PixelSpacing = ['1.1', '1']
write_series('spc', small, aff, tweak=space_one)
refused('inconsistent pixel spacing', 'spc', ['spc/s0009.dcm'])
u1 = write_series('mixed', small, aff, descr='first', number=3)
A2 = aff.copy()
A2[:3, 3] += 5
u2 = write_series('mixed', small[::-1], A2, names=['t%04d.dcm' % k for k in range(small.shape[2])],
                  descr='second', number=7)
refused('two series', 'mixed', [u1, u2])
rc, err = run('--series', '2', 'mixed', 'second.nii')
check('--series 2', rc == 0, err)
if rc == 0:
    same_volume('--series 2', 'second.nii', small[::-1], A2)
rc, err = run('--series', u1, 'mixed', 'first.nii')
check('--series UID', rc == 0, err)
if rc == 0:
    same_volume('--series UID', 'first.nii', small, aff)
rc, err = run('--gap-tolerance', '0.5', 'gap', 'gap.nii')
check('--gap-tolerance 0.5 reads the uneven series', rc == 0, err)
rc, err = run('missing_dir', 'bad.nii')
check('a missing input', rc == 1 and 'missing_dir' in err, err)
os.makedirs('empty', exist_ok=True)
rc, err = run('empty', 'bad.nii')
check('a directory without DICOM', rc == 1 and 'no DICOM image' in err, err)

# 5. NIfTI -> DICOM (ndforge's writer) -> NIfTI: ch2, an oblique int16 volume,
#    float values (stored with a rescale: quantized, within half a step), a
#    scaled int16 NIfTI.
for name, v, A in (('ch2', vol, aff), ('oblique int16', (obl.astype(np.int16) - 100), Aobl)):
    nib.Nifti1Image(v, A).to_filename('rt.nii.gz')
    rc1, e1 = run('rt.nii.gz', 'rt_dcm_' + name.replace(' ', '_'))
    rc2, e2 = run('rt_dcm_' + name.replace(' ', '_'), 'rt_back.nii.gz')
    check('round trip %s' % name, rc1 == 0 and rc2 == 0, e1 + e2)
    if rc1 == 0 and rc2 == 0:
        same_volume('round trip ' + name, 'rt_back.nii.gz', v, A)
f = (obl.astype(np.float32) * 0.37 + 0.1).astype(np.float32)
nib.Nifti1Image(f, Aobl).to_filename('rtf.nii')
rc1, e1 = run('rtf.nii', 'rtf_dcm')
rc2, e2 = run('rtf_dcm', 'rtf_back.nii')
check('float round trip', rc1 == 0 and rc2 == 0 and 'RescaleSlope' in e1, e1 + e2)
if rc2 == 0:
    g = np.asanyarray(nib.load('rtf_back.nii').dataobj)
    step = (f.max() - f.min()) / 65534
    check('float round trip: within half a step', np.abs(g - f).max() <= step * 0.51 + 1e-6 * np.abs(f).max(),
          'max diff %g, step %g' % (np.abs(g - f).max(), step))
# a NIfTI scaling becomes RescaleSlope / RescaleIntercept: the scaled values come back
sv = (obl.astype(np.int16) - 100)
nib.Nifti1Image(sv, aff).to_filename('rts.nii')
with open('rts.nii', 'r+b') as fh:  # scl_slope 3, scl_inter -7 (nibabel sets its own on save)
    fh.seek(112)
    fh.write(struct.pack('<ff', 3.0, -7.0))
rc1, e1 = run('rts.nii', 'rts_dcm')
rc2, e2 = run('rts_dcm', 'rts_back.nii')
check('scaled NIfTI round trip', rc1 == 0 and rc2 == 0 and not e1, e1 + e2)
if rc2 == 0:
    same_volume('scaled NIfTI round trip', 'rts_back.nii', (sv * 3 - 7).astype(np.int16), aff, np.int16)
rc, err = run('rt.nii.gz', 'rt_dcm_ch2')
check('DICOM output into a non-empty directory is refused', rc == 1, err)

# 6. 4-D NIfTI -> NIfTI keeps the header (sform/qform codes and matrices,
#    pixdim incl. TR, units, descrip, intent, scaling).
v4 = rng.integers(-300, 300, size=(7, 6, 5, 4)).astype(np.int16)
img = nib.Nifti1Image(v4, Aobl)
h = img.header
h.set_sform(Aobl, code=2)
h.set_qform(Aobl, code=1)
h.set_zooms(h.get_zooms()[:3] + (2.5,))
h.set_xyzt_units('mm', 'sec')
h['descrip'] = b'4-D round trip'
h.set_intent('t test', (12,), name='stat')
img.to_filename('4d.nii')
with open('4d.nii', 'r+b') as fh:  # scl_slope, scl_inter (nibabel sets its own on save)
    fh.seek(112)
    fh.write(struct.pack('<ff', 2.0, -1.0))
rc, err = run('4d.nii', '4d_out.nii.gz')
check('4-D NIfTI -> NIfTI', rc == 0, err)
if rc == 0:
    a, b = nib.load('4d.nii'), nib.load('4d_out.nii.gz')
    # 'regular' is "r" in what nifti_clib writes (a field ANALYZE used)
    diff = [k for k in a.header.keys() if k not in ('vox_offset', 'regular') and
            not np.array_equal(a.header[k], b.header[k], equal_nan=a.header[k].dtype.kind == 'f')]
    # (nibabel moves scl_slope and scl_inter from the header to the data proxy)
    check('4-D header kept', not diff and (b.dataobj.slope, b.dataobj.inter) == (2, -1),
          'fields differ: %s; slope, inter %s, %s' % (diff, b.dataobj.slope, b.dataobj.inter))
    check('4-D voxels', np.array_equal(b.dataobj.get_unscaled(), v4) and
          np.array_equal(np.asanyarray(b.dataobj), v4 * 2.0 - 1))
rc, err = run('4d.nii', '4d_dcm')
check('4-D NIfTI -> DICOM is refused', rc == 1 and '3-D' in err, err)

print('%d passed, %d failed' % (npass, nfail))
sys.exit(1 if nfail else 0)
PY
if "$py" dicom.py "$cli"; then npass=$((npass + 1)); else fail "DICOM and NIfTI conversions (above)"; fi
cli_summary
