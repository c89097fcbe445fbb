#!/usr/bin/env bash
# test_cli.sh -- end-to-end tests of the `ndforge` command.
#
#   tests/test_cli.sh path/to/ndforge SCRATCH_DIR
#
# Runs the command on small .npy / .nii.gz inputs made with NumPy and checks
# the results against scipy.ndimage itself, and checks that every bad input
# exits non-zero with one "ndforge: ..." line on stderr and writes no output.
# Needs a python3 with numpy and scipy (Debian's /usr/bin/python3); exits 77
# (ctest: skipped) without one.  NIfTI files are made and read with a small
# struct-based helper below, so nibabel is not needed (it is used as a second
# opinion when present).
set -u

cli=${1:?usage: test_cli.sh path/to/ndforge SCRATCH_DIR}
scratch=${2:?usage: test_cli.sh path/to/ndforge SCRATCH_DIR}
case $cli in /*) ;; *) cli=$PWD/$cli ;; esac
[ -x "$cli" ] || { echo "test_cli.sh: '$cli' is not executable" >&2; exit 1; }

py=
for cand in /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import numpy, scipy.ndimage' 2>/dev/null; then
    py=$cand
    break
  fi
done
if [ -z "$py" ]; then
  echo "SKIP: no python3 with numpy and scipy"
  exit 77
fi

rm -rf "$scratch"
mkdir -p "$scratch/in" "$scratch/out" "$scratch/cache" || exit 1
cd "$scratch" || exit 1
export NDF_CACHE_DIR=$scratch/cache
unset NDF_CACHE_DISABLE

npass=0
nfail=0
pass() { npass=$((npass + 1)); }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }

# ---------------------------------------------------------------------------
# Python helper: makes inputs, compares results with scipy, reads/writes NIfTI.
cat > helper.py <<'PY'
import gzip, struct, sys
import numpy as np
import scipy.ndimage as ndi

NIFTI_DT = {np.dtype('uint8'): 2, np.dtype('int16'): 4, np.dtype('int32'): 8,
            np.dtype('float32'): 16, np.dtype('float64'): 64, np.dtype('int8'): 256,
            np.dtype('uint16'): 512, np.dtype('uint32'): 768, np.dtype('complex64'): 32,
            np.dtype('int64'): 1024}
DT_NIFTI = {v: k for k, v in NIFTI_DT.items()}

def nifti_write(path, data, descrip=b'ndforge cli test', slope=0.0, inter=0.0):
    """A NIfTI-1 single file: 348-byte header, 4-byte extender, data (x fastest)."""
    h = bytearray(348)
    struct.pack_into('<i', h, 0, 348)
    dims = [data.ndim] + list(data.shape) + [1] * (7 - data.ndim)
    struct.pack_into('<8h', h, 40, *dims)
    dt = NIFTI_DT[data.dtype]
    struct.pack_into('<hh', h, 70, dt, data.dtype.itemsize * 8)
    struct.pack_into('<8f', h, 76, 1.0, 1.5, 2.0, 2.5, 1, 1, 1, 1)   # pixdim
    struct.pack_into('<f', h, 108, 352.0)                           # vox_offset
    struct.pack_into('<ff', h, 112, slope, inter)                   # scl_slope, scl_inter
    h[148:148 + len(descrip)] = descrip
    struct.pack_into('<hh', h, 252, 0, 2)                           # qform_code, sform_code
    struct.pack_into('<4f', h, 280, 1.5, 0, 0, -10)                 # srow_x
    struct.pack_into('<4f', h, 296, 0, 2.0, 0, -20)                 # srow_y
    struct.pack_into('<4f', h, 312, 0, 0, 2.5, -30)                 # srow_z
    h[344:348] = b'n+1\0'
    blob = bytes(h) + b'\0\0\0\0' + np.asarray(data).tobytes(order='F')
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'wb') as f:
        f.write(blob)

def nifti_read(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rb') as f:
        blob = f.read()
    assert struct.unpack_from('<i', blob, 0)[0] == 348, 'sizeof_hdr'
    assert blob[344:348] == b'n+1\0', 'magic'
    dims = struct.unpack_from('<8h', blob, 40)
    dt = struct.unpack_from('<h', blob, 70)[0]
    off = int(struct.unpack_from('<f', blob, 108)[0])
    shape = tuple(dims[1:1 + dims[0]])
    dtype = DT_NIFTI[dt]
    n = int(np.prod(shape)) * dtype.itemsize
    assert len(blob) == off + n, 'file size %d != %d + %d' % (len(blob), off, n)
    data = np.frombuffer(blob[off:off + n], dtype=dtype).reshape(shape, order='F')
    hdr = {'pixdim': struct.unpack_from('<8f', blob, 76)[1:1 + dims[0]],
           'descrip': blob[148:228].split(b'\0')[0],
           'sform_code': struct.unpack_from('<h', blob, 254)[0],
           'srow': struct.unpack_from('<12f', blob, 280),
           'scl': struct.unpack_from('<ff', blob, 112)}
    return data, hdr

def load(path):
    if path.endswith('.npy'):
        return np.load(path)
    return nifti_read(path)[0]

def make_inputs():
    rng = np.random.default_rng(12345)
    np.save('in/f32.npy', rng.standard_normal((7, 8, 9)).astype(np.float32))
    np.save('in/u8.npy', rng.integers(0, 256, (20, 21), dtype=np.uint8))
    np.save('in/i16.npy', rng.integers(-1000, 1000, (5, 6, 7), dtype=np.int16))
    np.save('in/u16.npy', rng.integers(0, 65535, (9, 10), dtype=np.uint16))
    np.save('in/i32.npy', rng.integers(-2**31, 2**31 - 1, (11, 5), dtype=np.int32))
    np.save('in/f64.npy', rng.standard_normal((33,)))
    np.save('in/batch.npy', rng.standard_normal((4, 8, 9)).astype(np.float32))
    np.save('in/fortran.npy', np.asfortranarray(rng.standard_normal((6, 7, 8))))
    fp = rng.random((3, 2, 3)) > 0.4
    fp[1, 1, 1] = True
    np.save('in/fp.npy', fp)
    np.save('in/st.npy', rng.integers(0, 3, (3, 3, 3)).astype(np.float64))
    fp2 = rng.random((3, 4)) > 0.5
    fp2[1, 2] = True
    np.save('in/fp2.npy', fp2)
    np.save('in/c64.npy', np.zeros((4, 4), np.complex64))
    np.save('in/i64.npy', rng.integers(-2**40, 2**40, (6, 7), dtype=np.int64))
    np.save('in/f16.npy', np.zeros((4, 4), np.float16))
    np.save('in/be.npy', np.zeros((4, 4), '>f4'))
    np.save('in/rec.npy', np.zeros(4, dtype=[('a', '<i4'), ('b', '<f4')]))
    np.save('in/big.npy', np.zeros((13,) * 1 + (1,) * 12, np.uint8))
    np.save('in/scalar.npy', np.float32(3))
    blob = open('in/f32.npy', 'rb').read()
    open('in/trunc.npy', 'wb').write(blob[:len(blob) - 5])
    open('in/trunc_hdr.npy', 'wb').write(blob[:40])
    open('in/extra.npy', 'wb').write(blob + b'\0\0\0\0')
    open('in/text.npy', 'w').write('this is not a numpy file\n')
    open('in/empty.npy', 'wb').close()
    hdr = blob[:10] + blob[10:].replace(b"'shape': (7, 8, 9)", b"'shape': (7, 8, x)", 1)
    open('in/badhdr.npy', 'wb').write(hdr)
    hdr = blob[:10] + blob[10:].replace(b"'shape': (7, 8, 9)",
                                        b"'shape': (99999999999, 99999999999, 9)", 1)[:len(blob) - 10]
    open('in/overflow.npy', 'wb').write(hdr)
    v2 = bytearray(b'\x93NUMPY\x02\x00')
    h = b"{'descr': '<i2', 'fortran_order': False, 'shape': (3, 4), }"
    h = h + b' ' * ((64 - (12 + len(h) + 1) % 64) % 64) + b'\n'
    v2 += struct.pack('<I', len(h)) + h + np.arange(12, dtype='<i2').tobytes()
    open('in/v2.npy', 'wb').write(bytes(v2))
    vol = rng.standard_normal((10, 12, 7)).astype(np.float32) * 100
    vol[3, 4, 5] = np.nan
    nifti_write('in/vol.nii.gz', vol, slope=2.0, inter=1.0)
    nifti_write('in/vol_u8.nii', rng.integers(0, 256, (9, 8, 6), dtype=np.uint8))
    nifti_write('in/vol_i64.nii.gz', rng.integers(-2**40, 2**40, (4, 5, 6), dtype=np.int64))
    blob = open('in/vol_u8.nii', 'rb').read()
    open('in/vol_trunc.nii', 'wb').write(blob[:len(blob) - 10])
    blob = gzip.open('in/vol.nii.gz').read()
    with gzip.open('in/vol_trunc.nii.gz', 'wb') as f:
        f.write(blob[:len(blob) - 100])
    # Binary morphology: blobs with holes, masks, structures.
    blob = ndi.binary_dilation(rng.random((16, 18)) > 0.93)
    blob[4:9, 5:10] = True
    blob[6, 7] = False                       # a hole
    blob[12:15, 2:6] = True
    blob[13, 3:5] = False                    # another
    np.save('in/blob.npy', blob)
    np.save('in/blobf.npy', np.where(blob, rng.standard_normal(blob.shape) + 3,
                                     0).astype(np.float32) * rng.choice([-1, 1], blob.shape))
    np.save('in/bmask.npy', rng.random((16, 18)) > 0.25)
    np.save('in/bmask_u8.npy', (rng.random((16, 18)) > 0.25).astype(np.uint8) * 7)
    np.save('in/bmask_bad.npy', np.ones((16, 17), bool))
    np.save('in/bseed.npy', np.pad(np.ones((1, 1), bool), ((7, 8), (8, 9))))
    np.save('in/bst.npy', np.array([[0, 1, 0], [1, 1, 1], [0, 0, 1]], bool))
    np.save('in/bst_even.npy', np.array([[1, 1, 0], [0, 1, 1]], np.uint8))
    np.save('in/bst_f.npy', np.array([[0, 2.5, 0], [1, 1, 0], [0, -1, 0]]))
    np.save('in/hm1.npy', np.array([[0, 0, 0], [0, 1, 1], [0, 1, 0]], bool))
    np.save('in/hm2.npy', np.array([[1, 1, 0], [1, 0, 0], [0, 0, 0]], bool))
    np.save('in/hm3.npy', np.array([[1, 0], [1, 1]], np.uint8))
    np.save('in/rand.npy', rng.random((24, 24)) > 0.5)  # hit_or_miss finds patterns in it
    np.save('in/randbatch.npy', np.stack([rng.random((24, 24)) > 0.5 for _ in range(3)]))
    b3 = rng.random((6, 7, 8)) > 0.4
    b3[2:4, 2:5, 3:6] = True
    b3[3, 3, 4] = False
    np.save('in/blob3.npy', b3.astype(np.uint8) * rng.integers(1, 200, b3.shape, dtype=np.uint8))
    np.save('in/bbatch.npy', np.stack([blob, ~blob, np.roll(blob, 3, axis=1)]))
    np.save('in/st3f.npy', ndi.generate_binary_structure(3, 1).astype(np.float64) * 2)
    np.save('in/line.npy', np.array([0, 0, 1, 0, 0], bool))
    np.save('in/st101.npy', np.array([1, 0, 1], bool))
    # label: features of several values (negative, NaN), batches, structures.
    lab = ndi.gaussian_filter(rng.standard_normal((20, 23)), 1.2) > 0.25
    lab[0, ::2] = True                       # isolated pixels on the top row
    lab[1, :] = False
    np.save('in/lab.npy', np.where(lab, rng.choice(np.array([1, -2, 7, -32768], np.int16), lab.shape),
                                   0).astype(np.int16))
    np.save('in/labf.npy', np.where(lab, rng.choice(np.array([0.5, -1, np.nan], np.float32), lab.shape),
                                    np.float32(-0.0)).astype(np.float32))
    lab3 = ndi.gaussian_filter(rng.standard_normal((9, 10, 11)), 1.0) > 0.15
    np.save('in/lab3.npy', lab3.astype(np.uint8) * 3)
    np.save('in/labfortran.npy', np.asfortranarray(lab3))
    np.save('in/labbatch.npy', np.stack([lab, ~lab, np.zeros_like(lab), np.roll(lab, 4, axis=0)]))
    np.save('in/labbatch2.npy', rng.random((2, 3, 6, 7)) > 0.6)
    many = np.zeros(601, bool)
    many[::2] = True                         # 301 features: too many for uint8 / int8
    np.save('in/many.npy', many)
    lst = rng.random((3, 3)) > 0.5
    lst = lst | lst[::-1, ::-1]
    lst[0, 0] = lst[2, 2] = True
    lst[0, 2] = lst[2, 0] = False            # symmetric, not one of scipy's generated ones
    np.save('in/lst.npy', lst.astype(np.float32) * 2)
    np.save('in/lst_nonsym.npy', np.array([[1, 1, 0], [0, 1, 0], [0, 0, 0]], bool))
    np.save('in/lst_32.npy', np.ones((3, 2), bool))
    # Rank filters: a float32 image with NaNs, a 3x3 block of them among them.
    nanf = rng.standard_normal((12, 13)).astype(np.float32)
    nanf[rng.random(nanf.shape) < 0.2] = np.nan
    nanf[5:8, 5:8] = np.nan
    np.save('in/nanf.npy', nanf)

def nan_omit_rank(x, size, kind, q=None):
    """ndforge's nan_policy omit of a box of SIZE, mode reflect (numpy's
    'symmetric'): the window's non-NaN values sorted, element m//2 (median)
    or int(m*q/100), m-1 for q = 100 (percentile); NaN for no values."""
    from numpy.lib.stride_tricks import sliding_window_view
    pad = [(s // 2, s - 1 - s // 2) for s in size]
    win = sliding_window_view(np.pad(x, pad, mode='symmetric'), size)
    win = win.reshape(x.shape + (-1,))
    out = np.full(x.shape, np.nan, x.dtype)
    for idx in np.ndindex(*x.shape):
        v = np.sort(win[idx][~np.isnan(win[idx])])
        m = len(v)
        if m:
            r = m // 2 if kind == 'median' else (m - 1 if q == 100 else int(m * q / 100.0))
            out[idx] = v[r]
    return out

def check_same(want, got, what):
    if got.dtype != want.dtype or got.shape != want.shape:
        sys.exit('%s: got %s %s, want %s %s' % (what, got.dtype, got.shape, want.dtype, want.shape))
    if not np.array_equal(got, want, equal_nan=want.dtype.kind == 'f'):
        bad = np.argwhere(~((got == want) | (np.isnan(got) & np.isnan(want))
                            if want.dtype.kind == 'f' else got == want))
        sys.exit('%s: %d of %d values differ, first at %s: got %r want %r' % (
            what, len(bad), got.size, tuple(bad[0]), got[tuple(bad[0])], want[tuple(bad[0])]))

def compare(op, inp, out, kwargs):
    """scipy.ndimage.OP(load(INPUT), **KWARGS), or OP(**KWARGS) when INPUT is '-'."""
    kw = eval(kwargs, {'np': np, 'load': load, 'ndi': ndi})
    want = getattr(ndi, op)(**kw) if inp == '-' else getattr(ndi, op)(load(inp), **kw)
    if isinstance(want, tuple):              # iterate_structure(..., origin) -> (out, origin)
        want = want[0]
    if op == 'iterate_structure':            # iterations < 2 returns the structure as is
        want = np.asarray(want) != 0
    if want.dtype == np.bool_ and not out.endswith('.npy'):
        want = want.astype(np.uint8)         # NIfTI has no bool: binary results are uint8
    check_same(want, load(out), '%s %s' % (op, kwargs))

def label_check(inp, out, batch, kwargs, stdout_path):
    """scipy.ndimage.label(image, **KWARGS) of each image of load(INPUT) (the
    first BATCH axes index the images, each labelled from 1) against OUTPUT,
    and the counts against the 'num_features: N ...' line in STDOUT_PATH."""
    kw = eval(kwargs, {'np': np, 'load': load, 'ndi': ndi})
    x = load(inp)
    want = np.zeros(x.shape, np.dtype(kw.get('output', np.int32)))
    counts = []
    for b in np.ndindex(*x.shape[:batch]):
        lab, n = ndi.label(x[b], **kw)
        want[b] = lab
        counts.append(n)
    check_same(want, load(out), 'label %s batch %d' % (kwargs, batch))
    text = open(stdout_path).read()
    expect = 'num_features:' + ''.join(' %d' % c for c in counts) + '\n'
    if text != expect:
        sys.exit('stdout is %r, want %r' % (text, expect))

def main():
    cmd = sys.argv[1]
    if cmd == 'make-inputs':
        make_inputs()
    elif cmd == 'compare':
        compare(*sys.argv[2:6])
    elif cmd == 'compare-list':    # lines DESC<tab>OP<tab>INPUT<tab>OUTPUT<tab>KWARGS
        for line in open(sys.argv[2]):
            desc, op, inp, out, kw = line.rstrip('\n').split('\t')
            try:
                compare(op, inp, out, kw)
                print('PASS')
            except SystemExit as e:
                print('FAIL: %s: %s' % (desc, e.code))
            except Exception as e:
                print('FAIL: %s: %s: %s' % (desc, type(e).__name__, e))
    elif cmd == 'label-list':      # lines DESC<tab>INPUT<tab>OUTPUT<tab>BATCH<tab>KWARGS<tab>STDOUT
        for line in open(sys.argv[2]):
            desc, inp, out, batch, kw, stdout = line.rstrip('\n').split('\t')
            try:
                label_check(inp, out, int(batch), kw, stdout)
                print('PASS')
            except SystemExit as e:
                print('FAIL: %s: %s' % (desc, e.code))
            except Exception as e:
                print('FAIL: %s: %s: %s' % (desc, type(e).__name__, e))
    elif cmd == 'nan-omit':        # nan-omit KIND Q INPUT OUTPUT SIZE,SIZE...
        kind, q, inp, out, size = sys.argv[2:7]
        want = nan_omit_rank(load(inp), tuple(int(v) for v in size.split(',')), kind, float(q))
        check_same(want, load(out), 'nan_policy omit %s' % kind)
    elif cmd == 'same':            # same values and dtype in two files
        check_same(load(sys.argv[2]), load(sys.argv[3]), 'same')
    elif cmd == 'nifti-header':    # output keeps the input's header
        _, a = nifti_read(sys.argv[2])
        _, b = nifti_read(sys.argv[3])
        for k in a:
            if a[k] != b[k]:
                sys.exit('header field %s: %r != %r' % (k, a[k], b[k]))
    elif cmd == 'nibabel':         # second opinion, when nibabel is installed
        try:
            import nibabel
        except ImportError:
            return
        img = nibabel.load(sys.argv[2])  # the stored values: ndforge reads them without scl_slope
        check_same(np.asanyarray(img.dataobj.get_unscaled()), load(sys.argv[3]), 'nibabel')
    elif cmd == 'npy-layout':      # header length and alignment of a written .npy
        blob = open(sys.argv[2], 'rb').read()
        assert blob[:8] == b'\x93NUMPY\x01\x00', blob[:8]
        hlen = struct.unpack_from('<H', blob, 8)[0]
        assert (10 + hlen) % 64 == 0, hlen
        assert blob[10 + hlen - 1:10 + hlen] == b'\n'
        assert not np.load(sys.argv[2]).flags.f_contiguous or np.load(sys.argv[2]).ndim < 2
    else:
        sys.exit('unknown helper command ' + cmd)

main()
PY

"$py" helper.py make-inputs || { echo "FAIL: cannot make inputs"; exit 1; }

# Runs the CLI; stdout/stderr of the last call in $scratch/last.{out,err}.
ndf() { "$cli" "$@" > last.out 2> last.err; }

# ok_run DESC OP INPUT OUTPUT PY-KWARGS CLI-OPTIONS...: runs and compares with scipy.
ok_run() {
  local desc=$1 op=$2 in=$3 out=$4 kw=$5
  shift 5
  rm -f "$out"
  if ! ndf run "$op" "$@" "$in" "$out"; then
    fail "$desc: exit $? ($(head -c 300 last.err))"
    return
  fi
  if [ -s last.err ]; then fail "$desc: unexpected stderr: $(head -c 300 last.err)"; return; fi
  if "$py" helper.py compare "$op" "$in" "$out" "$kw" 2> cmp.err; then pass; else
    fail "$desc: $(tail -n 1 cmp.err)"
  fi
}

# queue_run DESC OP INPUT PY-KWARGS CLI-OPTIONS...: runs into a new output and
# queues the comparison with scipy for compare_queued, which makes them all in
# one python (a python with scipy takes ~0.2 s to start).  The output is .npy,
# or has the extension in $qext (qext=.nii.gz queue_run ...).
nqueued=0
: > queue.tsv
queue_run() {
  local desc=$1 op=$2 in=$3 kw=$4
  shift 4
  nqueued=$((nqueued + 1))
  local out=out/q$nqueued${qext:-.npy}
  rm -f "$out"
  if ! ndf run "$op" "$@" "$in" "$out"; then
    fail "$desc: exit $? ($(head -c 300 last.err))"
    return
  fi
  if [ -s last.err ]; then fail "$desc: unexpected stderr: $(head -c 300 last.err)"; return; fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$desc" "$op" "$in" "$out" "$kw" >> queue.tsv
}
# queue_structure DESC OP INPUT|- PY-KWARGS CLI-ARGS...: `ndforge structure
# CLI-ARGS... OUTPUT` (OUTPUT appended), queued like queue_run.
queue_structure() {
  local desc=$1 op=$2 in=$3 kw=$4
  shift 4
  nqueued=$((nqueued + 1))
  local out=out/q$nqueued.npy
  rm -f "$out"
  if ! ndf structure "$@" "$out"; then
    fail "$desc: exit $? ($(head -c 300 last.err))"
    return
  fi
  if [ -s last.err ]; then fail "$desc: unexpected stderr: $(head -c 300 last.err)"; return; fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$desc" "$op" "$in" "$out" "$kw" >> queue.tsv
}
compare_queued() {
  local n np nf line
  n=$(wc -l < queue.tsv)
  [ "$n" -gt 0 ] || return 0
  "$py" helper.py compare-list queue.tsv > cmp.out 2>&1
  np=$(grep -c '^PASS$' cmp.out)
  nf=$(grep -c '^FAIL: ' cmp.out)
  npass=$((npass + np))
  while IFS= read -r line; do fail "${line#FAIL: }"; done < <(grep '^FAIL: ' cmp.out)
  [ $((np + nf)) -eq "$n" ] || fail "compare-list: $np + $nf results for $n runs: $(tail -n 3 cmp.out)"
  : > queue.tsv
}

# queue_label DESC INPUT BATCH PY-KWARGS CLI-OPTIONS...: `ndforge run label
# CLI-OPTIONS... INPUT OUTPUT` into a new output (.npy, or $qext); the labels
# (scipy's label of each image, BATCH leading axes) and the printed
# "num_features: ..." line are compared by compare_labels in one python.
nlabel=0
: > labelq.tsv
queue_label() {
  local desc=$1 in=$2 batch=$3 kw=$4
  shift 4
  nlabel=$((nlabel + 1))
  local out=out/l$nlabel${qext:-.npy}
  rm -f "$out"
  if ! ndf run label "$@" "$in" "$out"; then
    fail "$desc: exit $? ($(head -c 300 last.err))"
    return
  fi
  if [ -s last.err ]; then fail "$desc: unexpected stderr: $(head -c 300 last.err)"; return; fi
  cp last.out out/l$nlabel.txt
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$desc" "$in" "$out" "$batch" "$kw" out/l$nlabel.txt >> labelq.tsv
}
compare_labels() {
  local n np nf line
  n=$(wc -l < labelq.tsv)
  [ "$n" -gt 0 ] || return 0
  "$py" helper.py label-list labelq.tsv > cmp.out 2>&1
  np=$(grep -c '^PASS$' cmp.out)
  nf=$(grep -c '^FAIL: ' cmp.out)
  npass=$((npass + np))
  while IFS= read -r line; do fail "${line#FAIL: }"; done < <(grep '^FAIL: ' cmp.out)
  [ $((np + nf)) -eq "$n" ] || fail "label-list: $np + $nf results for $n runs: $(tail -n 3 cmp.out)"
  : > labelq.tsv
}

# bad DESC WANT_RC OUTPUT CLI-ARGS...: must exit WANT_RC (or any non-zero
# when WANT_RC is "any") with one "ndforge: " line and leave no OUTPUT.
bad() {
  local desc=$1 want=$2 out=$3
  shift 3
  rm -f "$out"
  ndf "$@"
  local rc=$?
  local lines
  lines=$(wc -l < last.err)
  if [ "$rc" -eq 0 ]; then fail "$desc: exit 0"; return; fi
  if [ "$want" != any ] && [ "$rc" -ne "$want" ]; then
    fail "$desc: exit $rc, want $want ($(head -c 300 last.err))"; return
  fi
  if [ "$lines" -ne 1 ] || ! grep -q '^ndforge: ' last.err; then
    fail "$desc: stderr is not one 'ndforge: ' line: $(head -c 300 last.err)"; return
  fi
  if [ -e "$out" ]; then fail "$desc: left $out behind"; return; fi
  if ls -A "$(dirname "$out")" 2>/dev/null | grep -q ndftmp; then fail "$desc: left a temporary file"; return; fi
  pass
}

has_cuda=0
if ndf info && grep -q '^device 0:' last.out; then has_cuda=1; fi
devices="cpu"
[ "$has_cuda" = 1 ] && devices="cpu cuda"

# ---------------------------------------------------------------------------
# Results equal scipy.ndimage's.
for dev in $devices; do
  d="--device $dev"
  ok_run "$dev erosion size 3" grey_erosion in/f32.npy out/r.npy "dict(size=3)" --size 3 $d
  ok_run "$dev dilation size 3,2,4 constant" grey_dilation in/f32.npy out/r.npy \
    "dict(size=(3,2,4), mode='constant', cval=2.5)" --size 3,2,4 --mode constant --cval 2.5 $d
  ok_run "$dev erosion footprint origin" grey_erosion in/f32.npy out/r.npy \
    "dict(footprint=load('in/fp.npy'), origin=(1,-1,0))" --footprint in/fp.npy --origin 1,-1,0 $d
  ok_run "$dev dilation footprint origin" grey_dilation in/f32.npy out/r.npy \
    "dict(footprint=load('in/fp.npy'), origin=(1,-1,0))" --footprint=in/fp.npy --origin=1,-1,0 $d
  ok_run "$dev dilation structure" grey_dilation in/f32.npy out/r.npy \
    "dict(structure=load('in/st.npy'))" --structure in/st.npy $d
  ok_run "$dev erosion structure nearest" grey_erosion in/f32.npy out/r.npy \
    "dict(structure=load('in/st.npy'), mode='nearest')" --structure in/st.npy --mode nearest $d
  ok_run "$dev erosion uint8 wrap" grey_erosion in/u8.npy out/r.npy \
    "dict(size=(5,2), mode='wrap')" --size 5,2 --mode wrap $d
  ok_run "$dev dilation uint8 mirror origin" grey_dilation in/u8.npy out/r.npy \
    "dict(size=4, mode='mirror', origin=-1)" --size 4 --mode mirror --origin -1 $d
  ok_run "$dev erosion int16 constant cval" grey_erosion in/i16.npy out/r.npy \
    "dict(size=3, mode='constant', cval=-3)" --size 3 --mode constant --cval -3 $d
  ok_run "$dev dilation uint16 grid-wrap" grey_dilation in/u16.npy out/r.npy \
    "dict(size=3, mode='grid-wrap')" --size 3 --mode grid-wrap $d
  ok_run "$dev erosion int32 grid-constant" grey_erosion in/i32.npy out/r.npy \
    "dict(size=(2,3), mode='grid-constant', cval=7)" --size 2,3 --mode grid-constant --cval 7 $d
  ok_run "$dev dilation float64 1-D" grey_dilation in/f64.npy out/r.npy \
    "dict(size=5, mode='reflect')" --size 5 $d
  ok_run "$dev erosion Fortran-order input" grey_erosion in/fortran.npy out/r.npy \
    "dict(size=(3,1,2), mode='mirror')" --size 3,1,2 --mode mirror $d
  ok_run "$dev dilation Fortran-order footprint" grey_dilation in/fortran.npy out/r.npy \
    "dict(footprint=load('in/fp.npy'))" --footprint in/fp.npy $d
  ok_run "$dev erosion npy v2.0 input" grey_erosion in/v2.npy out/r.npy "dict(size=2)" --size 2 $d
  ok_run "$dev erosion batch-dims 1" grey_erosion in/batch.npy out/r.npy \
    "dict(size=(1,3,3))" --size 3 --batch-dims 1 $d
  ok_run "$dev erosion NIfTI in, npy out" grey_erosion in/vol_u8.nii out/r.npy \
    "dict(size=3)" --size 3 $d
done
ok_run "auto device" grey_dilation in/f32.npy out/r.npy "dict(size=2)" --size 2

# Composite ops: scipy composes erosion and dilation and does the arithmetic
# in the input dtype (uint8 wraps around: the uint8 laplace overflows).
for dev in $devices; do
  d="--device $dev"
  queue_run "$dev grey_opening size 3" grey_opening in/f32.npy "dict(size=3)" --size 3 $d
  queue_run "$dev grey_opening uint8 wrap" grey_opening in/u8.npy \
    "dict(size=(5,2), mode='wrap')" --size 5,2 --mode wrap $d
  queue_run "$dev grey_closing footprint origin" grey_closing in/f32.npy \
    "dict(footprint=load('in/fp.npy'), origin=(1,-1,0))" --footprint in/fp.npy --origin 1,-1,0 $d
  queue_run "$dev grey_closing uint8 mirror origin" grey_closing in/u8.npy \
    "dict(size=4, mode='mirror', origin=-1)" --size 4 --mode mirror --origin -1 $d
  queue_run "$dev morphological_gradient structure nearest" morphological_gradient in/f32.npy \
    "dict(structure=load('in/st.npy'), mode='nearest')" --structure in/st.npy --mode nearest $d
  queue_run "$dev morphological_gradient uint8 constant" morphological_gradient in/u8.npy \
    "dict(size=3, mode='constant', cval=7)" --size 3 --mode constant --cval 7 $d
  queue_run "$dev morphological_laplace constant" morphological_laplace in/f32.npy \
    "dict(size=(3,2,4), mode='constant', cval=2.5)" --size 3,2,4 --mode constant --cval 2.5 $d
  queue_run "$dev morphological_laplace uint8 (wraps)" morphological_laplace in/u8.npy \
    "dict(size=3)" --size 3 $d
  queue_run "$dev white_tophat batch-dims 1" white_tophat in/batch.npy \
    "dict(size=(1,3,3))" --size 3 --batch-dims 1 $d
  queue_run "$dev white_tophat uint8 footprint grid-wrap" white_tophat in/u8.npy \
    "dict(footprint=load('in/fp2.npy'), mode='grid-wrap')" --footprint in/fp2.npy --mode grid-wrap $d
  queue_run "$dev black_tophat int16 structure constant" black_tophat in/i16.npy \
    "dict(structure=load('in/st.npy'), mode='constant', cval=-3)" --structure in/st.npy --mode constant --cval -3 $d
  queue_run "$dev black_tophat uint8 grid-constant" black_tophat in/u8.npy \
    "dict(size=(2,3), mode='grid-constant', cval=9)" --size 2,3 --mode grid-constant --cval 9 $d
done
compare_queued

# ---------------------------------------------------------------------------
# Binary morphology (--device auto: CUDA when there is a device).
# Non-zero input is true; .npy outputs are bool (checked: same dtype as scipy's).
mask="load('in/bmask.npy')"
cross2="ndi.generate_binary_structure(2, 1)[None]"   # batch axis of size 1
ndf structure generate 2 2 out/gen22.npy || fail "structure generate 2 2: $(cat last.err)"
queue_run "binary_erosion default" binary_erosion in/blob.npy "dict()"
queue_run "binary_erosion structure border_value 1" binary_erosion in/blob.npy \
  "dict(structure=load('in/bst.npy'), border_value=1)" --structure in/bst.npy --border-value 1
queue_run "binary_erosion iterations -1 mask" binary_erosion in/blob.npy \
  "dict(iterations=-1, mask=$mask)" --iterations -1 --mask in/bmask.npy
queue_run "binary_erosion iterations 0 uint8 mask" binary_erosion in/blob.npy \
  "dict(iterations=0, mask=load('in/bmask_u8.npy'))" --iterations=0 --mask=in/bmask_u8.npy
queue_run "binary_erosion structure origin" binary_erosion in/blob.npy \
  "dict(structure=load('in/bst.npy'), origin=(1,-1))" --structure in/bst.npy --origin 1,-1
queue_run "binary_erosion float input iterations 2 brute_force" binary_erosion in/blobf.npy \
  "dict(iterations=2, brute_force=True)" --iterations 2 --brute-force
queue_run "binary_erosion 3-D uint8 input float structure" binary_erosion in/blob3.npy \
  "dict(structure=load('in/st3f.npy'), border_value=1)" --structure in/st3f.npy --border-value 1 --device cpu
queue_run "binary_erosion batch-dims 1" binary_erosion in/bbatch.npy \
  "dict(structure=$cross2)" --batch-dims 1
queue_run "binary_dilation default" binary_dilation in/blob.npy "dict()"
queue_run "binary_dilation even structure origin" binary_dilation in/blob.npy \
  "dict(structure=load('in/bst_even.npy'), origin=(0,-1))" --structure in/bst_even.npy --origin 0,-1
queue_run "binary_dilation iterations -1 mask border_value 1" binary_dilation in/bseed.npy \
  "dict(iterations=-1, mask=$mask, border_value=1)" --iterations -1 --mask in/bmask.npy --border-value 1
queue_run "binary_dilation iterations 3 brute_force false" binary_dilation in/blob.npy \
  "dict(structure=load('in/bst.npy'), iterations=3, brute_force=False)" \
  --structure in/bst.npy --iterations 3 --brute-force false
queue_run "binary_dilation float structure origin 1" binary_dilation in/blob.npy \
  "dict(structure=load('in/bst_f.npy'), origin=1)" --structure in/bst_f.npy --origin 1 --brute-force=true
queue_run "binary_opening structure" binary_opening in/blob.npy \
  "dict(structure=load('in/bst.npy'))" --structure in/bst.npy
queue_run "binary_opening iterations 2" binary_opening in/blob.npy "dict(iterations=2)" --iterations 2
queue_run "binary_opening mask border_value 1" binary_opening in/blobf.npy \
  "dict(mask=$mask, border_value=1)" --mask in/bmask.npy --border-value 1
queue_run "binary_closing default" binary_closing in/blob.npy "dict()"
queue_run "binary_closing iterations 2 brute_force" binary_closing in/blob.npy \
  "dict(iterations=2, brute_force=True)" --iterations 2 --brute-force true
queue_run "binary_closing structure origin border_value 1" binary_closing in/blob.npy \
  "dict(structure=load('in/bst.npy'), origin=(-1,0), border_value=1)" \
  --structure in/bst.npy --origin -1,0 --border-value 1
queue_run "binary_closing iterations -1 mask" binary_closing in/blob.npy \
  "dict(iterations=-1, mask=$mask)" --iterations -1 --mask in/bmask.npy
queue_run "binary_propagation mask" binary_propagation in/bseed.npy "dict(mask=$mask)" --mask in/bmask.npy
queue_run "binary_propagation structure mask border_value 1" binary_propagation in/bseed.npy \
  "dict(structure=ndi.generate_binary_structure(2, 2), mask=$mask, border_value=1)" \
  --structure out/gen22.npy --mask in/bmask.npy --border-value 1
queue_run "binary_propagation no mask" binary_propagation in/blob.npy "dict()"
queue_run "binary_fill_holes default" binary_fill_holes in/blob.npy "dict()"
queue_run "binary_fill_holes structure origin" binary_fill_holes in/blob.npy \
  "dict(structure=load('in/bst.npy'), origin=(0,1))" --structure in/bst.npy --origin 0,1
queue_run "binary_fill_holes 3-D uint8" binary_fill_holes in/blob3.npy "dict()"
queue_run "binary_fill_holes batch-dims 1" binary_fill_holes in/bbatch.npy \
  "dict(structure=$cross2)" --batch-dims 1
queue_run "binary_hit_or_miss default" binary_hit_or_miss in/rand.npy "dict()"
queue_run "binary_hit_or_miss even structure1" binary_hit_or_miss in/rand.npy \
  "dict(structure1=load('in/hm3.npy'))" --structure1 in/hm3.npy
queue_run "binary_hit_or_miss structure1 structure2 origin1 origin2" binary_hit_or_miss in/rand.npy \
  "dict(structure1=load('in/hm1.npy'), structure2=load('in/hm2.npy'), origin1=(-1,0), origin2=(1,1))" \
  --structure1 in/hm1.npy --structure2 in/hm2.npy --origin1 -1,0 --origin2 1,1
queue_run "binary_hit_or_miss origin1 only (origin2 = origin1)" binary_hit_or_miss in/rand.npy \
  "dict(structure1=load('in/hm1.npy'), structure2=load('in/hm2.npy'), origin1=-1)" \
  --structure1 in/hm1.npy --structure2 in/hm2.npy --origin1 -1
queue_run "binary_hit_or_miss origin2 only" binary_hit_or_miss in/rand.npy \
  "dict(structure1=load('in/hm3.npy'), origin2=(-1,-1))" --structure1 in/hm3.npy --origin2 -1,-1
queue_run "binary_hit_or_miss float input" binary_hit_or_miss in/blobf.npy \
  "dict(structure1=load('in/hm3.npy'))" --structure1 in/hm3.npy
queue_run "binary_hit_or_miss batch-dims 1" binary_hit_or_miss in/randbatch.npy \
  "dict(structure1=load('in/hm3.npy')[None])" --structure1 in/hm3.npy --batch-dims 1
queue_run "binary_erosion NIfTI input" binary_erosion in/vol_u8.nii "dict()"
# NIfTI outputs of binary ops are uint8 (NIfTI has no bool) and keep the header.
qext=.nii.gz queue_run "binary_fill_holes NIfTI -> NIfTI (uint8)" binary_fill_holes in/vol_u8.nii "dict()"
fh_out=out/q$nqueued.nii.gz
qext=.nii queue_run "binary_erosion npy -> NIfTI (uint8)" binary_erosion in/blob.npy \
  "dict(iterations=2)" --iterations 2

# structure generate / iterate: scipy's generate_binary_structure / iterate_structure.
for g in 1,1 2,1 2,2 3,1 3,2 3,3 3,-1 3,0 2,7 4,2 8,1; do
  r=${g%,*} c=${g#*,}
  queue_structure "structure generate $r $c" generate_binary_structure - \
    "dict(rank=$r, connectivity=$c)" generate "$r" "$c"
done
queue_structure "structure iterate 2-D 3" iterate_structure in/bst.npy "dict(iterations=3)" \
  iterate in/bst.npy 3
queue_structure "structure iterate even 2" iterate_structure in/bst_even.npy "dict(iterations=2)" \
  iterate in/bst_even.npy 2
queue_structure "structure iterate 3-D float 2 origin" iterate_structure in/st3f.npy \
  "dict(iterations=2, origin=(1,0,-1))" iterate in/st3f.npy 2 --origin 1,0,-1
[ "$(cat last.out)" = "2,0,-2" ] && pass || fail "structure iterate prints the scaled origin: '$(cat last.out)'"
queue_structure "structure iterate 4 origin 1" iterate_structure in/bst.npy \
  "dict(iterations=4, origin=1)" iterate --origin=1 in/bst.npy 4
[ "$(cat last.out)" = "4,4" ] && pass || fail "structure iterate --origin 1 (one value): '$(cat last.out)'"
for it in 1 0 -2; do
  queue_structure "structure iterate float $it (a copy)" iterate_structure in/bst_f.npy \
    "dict(iterations=$it)" iterate in/bst_f.npy "$it"
done
queue_structure "structure iterate no --origin prints nothing" iterate_structure in/bst.npy \
  "dict(iterations=2)" iterate in/bst.npy 2
[ -s last.out ] && fail "structure iterate without --origin printed: $(cat last.out)" || pass
compare_queued

"$py" helper.py nifti-header in/vol_u8.nii "$fh_out" && pass || fail "NIfTI header kept (binary_fill_holes)"

# ---------------------------------------------------------------------------
# label: scipy.ndimage.label of each image; int32 labels (also in NIfTI files)
# unless --output-dtype; "num_features: N" (one count per image) on stdout.
ndf structure generate 2 2 out/lgen22.npy || fail "structure generate 2 2: $(cat last.err)"
ndf structure generate 3 2 out/lgen32.npy || fail "structure generate 3 2: $(cat last.err)"
queue_label "label default (int16, negative values)" in/lab.npy 0 "dict()"
queue_label "label --device cpu --batch-dims 0" in/lab.npy 0 "dict()" --device cpu --batch-dims 0
queue_label "label 8-connected" in/lab.npy 0 "dict(structure=ndi.generate_binary_structure(2, 2))" \
  --structure out/lgen22.npy
queue_label "label float structure" in/lab.npy 0 "dict(structure=load('in/lst.npy'))" --structure in/lst.npy
queue_label "label float32 NaN foreground" in/labf.npy 0 "dict()"
queue_label "label float32 NaN, --output-dtype float32" in/labf.npy 0 "dict(output=np.float32)" \
  --output-dtype float32
queue_label "label --output-dtype uint8" in/lab.npy 0 "dict(output=np.uint8)" --output-dtype uint8
queue_label "label --output-dtype=int8" in/lab.npy 0 "dict(output=np.int8)" --output-dtype=int8
queue_label "label --output-dtype uint16" in/lab.npy 0 "dict(output=np.uint16)" --output-dtype uint16
queue_label "label --output-dtype uint32" in/lab.npy 0 "dict(output=np.uint32)" --output-dtype uint32
queue_label "label --output-dtype float64" in/lab3.npy 0 "dict(output=np.float64)" --output-dtype float64
queue_label "label --output-dtype bool (one feature)" in/bst.npy 0 "dict(output=np.bool_)" --output-dtype bool
queue_label "label --output-dtype b1 (the labels' bytes)" in/lab.npy 0 "dict(output=np.bool_)" --output-dtype b1
queue_label "label 3-D uint8" in/lab3.npy 0 "dict()"
queue_label "label 3-D connectivity 2" in/lab3.npy 0 "dict(structure=ndi.generate_binary_structure(3, 2))" \
  --structure out/lgen32.npy
queue_label "label Fortran-order input" in/labfortran.npy 0 "dict()"
queue_label "label 301 features, --output-dtype int16" in/many.npy 0 "dict(output=np.int16)" --output-dtype int16
queue_label "label 301 features" in/many.npy 0 "dict()"
queue_label "label --batch-dims 1 (an empty image)" in/labbatch.npy 1 "dict()" --batch-dims 1
queue_label "label --batch-dims 1 structure" in/labbatch.npy 1 "dict(structure=load('in/lst.npy'))" \
  --structure in/lst.npy --batch-dims 1
queue_label "label --batch-dims 1 --output-dtype uint8" in/labbatch.npy 1 "dict(output=np.uint8)" \
  --batch-dims=1 --output-dtype uint8
queue_label "label --batch-dims 2" in/labbatch2.npy 2 "dict()" --batch-dims 2
queue_label "label --batch-dims 1 of 4-D (3-D images)" in/labbatch2.npy 1 \
  "dict(structure=ndi.generate_binary_structure(3, 2))" --batch-dims 1 --structure out/lgen32.npy
queue_label "label NIfTI -> npy" in/vol_u8.nii 0 "dict()"
qext=.nii.gz queue_label "label NIfTI -> NIfTI (int32)" in/vol_u8.nii 0 "dict()"
lab_nii=out/l$nlabel.nii.gz
qext=.nii queue_label "label npy -> NIfTI --output-dtype uint16" in/lab3.npy 0 "dict(output=np.uint16)" \
  --output-dtype uint16
compare_labels
"$py" helper.py nifti-header in/vol_u8.nii "$lab_nii" && pass || fail "NIfTI header kept (label)"
ndf run label --output-dtype bool in/many.npy out/lbool_many.npy && \
  fail "label --output-dtype bool of 301 features: exit 0" || \
  { grep -q "bit-depth" last.err && [ ! -e out/lbool_many.npy ] && pass || \
    fail "label --output-dtype bool of 301 features: $(head -c 300 last.err)"; }

# ---------------------------------------------------------------------------
# Rank filters: scipy's median_filter, rank_filter, percentile_filter.
queue_run "median_filter uint8 size 3" median_filter in/u8.npy "dict(size=3)" --size 3
queue_run "median_filter float32 footprint origin" median_filter in/f32.npy \
  "dict(footprint=load('in/fp.npy'), origin=(1,-1,0))" --footprint in/fp.npy --origin 1,-1,0
queue_run "median_filter float32 even size constant cval" median_filter in/f32.npy \
  "dict(size=(4,3,2), mode='constant', cval=0.25)" --size 4,3,2 --mode constant --cval 0.25
queue_run "rank_filter uint8 rank 2 constant cval" rank_filter in/u8.npy \
  "dict(rank=2, size=3, mode='constant', cval=7)" --rank 2 --size 3 --mode constant --cval 7
queue_run "rank_filter float32 rank -1 footprint" rank_filter in/f32.npy \
  "dict(rank=-1, footprint=load('in/fp.npy'))" --rank -1 --footprint in/fp.npy
queue_run "rank_filter uint8 rank 0 origin mirror" rank_filter in/u8.npy \
  "dict(rank=0, size=(4,2), origin=(-1,0), mode='mirror')" --rank=0 --size 4,2 --origin -1,0 --mode mirror
queue_run "rank_filter uint8 rank 5 wrap --algorithm tile" rank_filter in/u8.npy \
  "dict(rank=5, size=(4,3), mode='wrap')" --rank 5 --size 4,3 --mode wrap --algorithm tile
queue_run "percentile_filter float32 30 nearest" percentile_filter in/f32.npy \
  "dict(percentile=30, size=(3,4,2), mode='nearest')" --percentile 30 --size 3,4,2 --mode nearest
queue_run "percentile_filter uint8 -25 footprint constant" percentile_filter in/u8.npy \
  "dict(percentile=-25, footprint=load('in/fp2.npy'), mode='constant', cval=9)" \
  --percentile -25 --footprint in/fp2.npy --mode constant --cval 9
queue_run "percentile_filter float32 100 batch-dims 1" percentile_filter in/batch.npy \
  "dict(percentile=100, size=(1,3,3))" --percentile 100 --size 3 --batch-dims 1 --device cpu
if [ "$has_cuda" = 1 ]; then
  queue_run "median_filter float32 --device cuda" median_filter in/f32.npy "dict(size=(3,5,1))" \
    --size 3,5,1 --device cuda
  queue_run "percentile_filter uint8 --device cuda constant" percentile_filter in/u8.npy \
    "dict(percentile=70, size=(4,3), mode='constant', cval=7)" --percentile 70 --size 4,3 --mode constant \
    --cval 7 --device cuda
fi
compare_queued
rm -f out/nanomit.npy
ndf run median_filter --size 3 --nan-policy omit in/nanf.npy out/nanomit.npy &&
  "$py" helper.py nan-omit median 0 in/nanf.npy out/nanomit.npy 3,3 2> cmp.err &&
  pass || fail "median_filter --nan-policy omit: $(cat last.err) $(tail -n 1 cmp.err)"
# Bad rank-filter command lines (exit 2) and library refusals (exit 1).
o=out/bad.npy
bad "rank_filter without --rank" 2 $o run rank_filter --size 3 in/u8.npy $o
grep -q "^ndforge: 'run rank_filter' needs --rank N" last.err && pass || fail "missing --rank message: $(cat last.err)"
bad "percentile_filter without --percentile" 2 $o run percentile_filter --size 3 in/u8.npy $o
bad "median_filter --rank" 2 $o run median_filter --size 3 --rank 1 in/u8.npy $o
bad "rank_filter --percentile" 2 $o run rank_filter --size 3 --rank 1 --percentile 50 in/u8.npy $o
bad "median_filter --structure" 2 $o run median_filter --structure in/st.npy in/f32.npy $o
bad "grey_erosion --nan-policy" 2 $o run grey_erosion --size 3 --nan-policy omit in/f32.npy $o
bad "--nan-policy ignore" 2 $o run median_filter --size 3 --nan-policy ignore in/f32.npy $o
# --algorithm (grey): every algorithm gives scipy's result where it is exact,
# is refused (exit 1) where not, and a bad name is a usage error (exit 2).
for alg in auto direct separable vhgw decomposed; do
  queue_run "grey_erosion size 11 --algorithm $alg" grey_erosion in/f32.npy \
    "dict(size=11, mode='wrap')" --size 11 --mode wrap --algorithm $alg
done
queue_run "white_tophat size 9,3 --algorithm vhgw" white_tophat in/u8.npy \
  "dict(size=(9,3), mode='constant', cval=4)" --size 9,3 --mode constant --cval 4 --algorithm vhgw
compare_queued
bad "--algorithm vhgw with a structure" 1 $o run grey_erosion --structure in/st.npy --algorithm vhgw in/f32.npy $o
grep -q "bad argument 'algorithm'" last.err && pass || fail "vhgw refusal message: $(cat last.err)"
bad "--algorithm fast" 2 $o run grey_erosion --size 3 --algorithm fast in/f32.npy $o
bad "grey --algorithm network (a rank name)" 2 $o run grey_erosion --size 3 --algorithm network in/f32.npy $o
bad "median --algorithm vhgw (a grey name)" 2 $o run median_filter --size 3 --algorithm vhgw in/f32.npy $o
for v in x 1.5 "" 1,2; do bad "--rank '$v'" 2 $o run rank_filter --size 3 --rank "$v" in/u8.npy $o; done
for v in x nan inf ""; do bad "--percentile '$v'" 2 $o run percentile_filter --size 3 --percentile "$v" in/u8.npy $o; done
bad "cache warm rank_filter without --rank" 2 $o cache warm --arch sm_90 rank_filter --dtype uint8 --size 3
bad "cache warm grey_erosion --nan-policy" 2 $o cache warm --arch sm_90 grey_erosion --dtype uint8 --size 3 \
  --nan-policy omit
grep -q "^ndforge: 'grey_erosion' does not take --nan-policy" last.err && pass ||
  fail "cache warm extra option message: $(cat last.err)"
bad "rank_filter --algorithm network without a network" 1 $o run rank_filter --rank 3 --size 7 --algorithm network \
  in/u8.npy $o
grep -q "^ndforge: ndf_rank_filter: bad argument 'algorithm'" last.err && pass ||
  fail "--algorithm network message: $(cat last.err)"
bad "median_filter --algorithm tile with a footprint" 1 $o run median_filter --footprint in/fp.npy --algorithm tile \
  in/f32.npy $o
grep -q "^ndforge: ndf_median_filter: bad argument 'algorithm'" last.err && pass ||
  fail "--algorithm tile message: $(cat last.err)"
bad "rank_filter --rank 9 of 9 taps" 1 $o run rank_filter --size 3 --rank 9 in/u8.npy $o
grep -q "^ndforge: ndf_rank_filter: bad argument 'rank'" last.err && pass || fail "rank range message: $(cat last.err)"
bad "rank_filter --rank -10 of 9 taps" 1 $o run rank_filter --size 3 --rank -10 in/u8.npy $o
bad "percentile_filter --percentile 150" 1 $o run percentile_filter --size 3 --percentile 150 in/u8.npy $o
grep -q "^ndforge: ndf_percentile_filter: bad argument 'percentile'" last.err && pass || fail "percentile message: $(cat last.err)"
bad "median_filter without size or footprint" 1 $o run median_filter in/u8.npy $o
bad "median_filter origin outside the window" 1 $o run median_filter --size 3 --origin 2 in/u8.npy $o
if [ "$has_cuda" = 0 ]; then
  bad "median_filter --device cuda without a GPU" 1 $o run median_filter --size 3 --device cuda in/u8.npy $o
fi
ndf run --help && grep -q '^  percentile_filter  *[a-z]' last.out && grep -q -- '--nan-policy' last.out &&
  pass || fail "run --help lists the rank filters: $(cat last.out)"
ndf run rank_filter --help && grep -q -- '--rank N' last.out && grep -q '^Required: --rank N' last.out &&
  ! grep -q -- '--percentile' last.out && pass || fail "run rank_filter --help: $(cat last.out)"

# Written .npy files: version 1.0, data aligned to 64 bytes, C order.
ndf run grey_erosion --size 3 in/fortran.npy out/layout.npy &&
  "$py" helper.py npy-layout out/layout.npy && pass || fail "npy output layout"

# ---------------------------------------------------------------------------
# NIfTI: results, header kept, NaN kept, npy -> NIfTI.
ok_run "NIfTI erosion" grey_erosion in/vol_u8.nii out/r.nii.gz "dict(size=(3,1,2))" --size 3,1,2
ok_run "NIfTI morphological_gradient" morphological_gradient in/vol_u8.nii out/g.nii.gz \
  "dict(size=(3,1,2), mode='nearest')" --size 3,1,2 --mode nearest
"$py" helper.py nifti-header in/vol_u8.nii out/g.nii.gz && pass || fail "NIfTI header kept (morphological_gradient)"
ndf run grey_dilation --size 3 in/vol_u8.nii out/h.nii.gz &&
  "$py" helper.py nifti-header in/vol_u8.nii out/h.nii.gz && pass || fail "NIfTI header kept (.nii -> .nii.gz)"
ndf run grey_dilation --size 1 in/vol.nii.gz out/id.nii &&
  "$py" helper.py same in/vol.nii.gz out/id.nii && "$py" helper.py nifti-header in/vol.nii.gz out/id.nii &&
  pass || fail "NIfTI float identity round trip (NaN and scl_slope kept)"
"$py" helper.py nibabel in/vol.nii.gz out/id.nii && pass || fail "nibabel reads the output"
ndf run grey_erosion --size 3 in/f32.npy out/fresh.nii.gz &&
  "$py" helper.py compare grey_erosion in/f32.npy out/fresh.nii.gz "dict(size=3)" &&
  pass || fail "npy -> fresh NIfTI header"

# ---------------------------------------------------------------------------
# Tunables (ADR 0019): --tune NAME=VALUE (repeatable) selects a variant, the
# result is scipy's under any; ndforge tunables lists them; ndforge tune needs
# a GPU, --show and --list do not.
ok_run "--tune (repeatable)" grey_erosion in/f32.npy out/tuned.npy "dict(size=3)" --size 3 \
  --tune grey.box=classic --tune grey.boxd_ry=4 --tune grey.line=default
ndf tunables && grep -q '^ecc\.3d  *ecc  *auto\*|old ' last.out && grep -q '^grey\.boxd_ry .* 1\.\.8 (8\*)' last.out &&
  [ "$(wc -l < last.out)" -gt 40 ] && pass || fail "ndforge tunables: $(head -3 last.out) $(cat last.err)"
ndf tune --list && grep -q '^ecc_float32_256x256x256_T256$' last.out && grep -q '^median_u8_1024x1024_s31_b0$' last.out &&
  pass || fail "ndforge tune --list: $(cat last.err)"
ndf tune --show && grep -q '^# ' last.out && pass || fail "ndforge tune --show: $(cat last.err)"
if [ "$has_cuda" = 0 ]; then
  "$cli" tune --only ecc_float32_1024x1024 > last.out 2> last.err
  [ $? = 1 ] && [ "$(wc -l < last.err)" -eq 1 ] && grep -q '^ndforge: tune needs a CUDA device' last.err &&
    pass || fail "ndforge tune without a GPU: $(cat last.err)"
fi

# ---------------------------------------------------------------------------
# Bad command lines: exit 2.
o=out/bad.npy
bad "--tune without =" 2 $o run grey_erosion --size 3 --tune grey.box in/f32.npy $o
bad "--tune unknown tunable" 2 $o run grey_erosion --size 3 --tune grey.nosuch=1 in/f32.npy $o
bad "--tune value outside the domain" 2 $o run grey_erosion --size 3 --tune grey.boxd_ry=9 in/f32.npy $o
bad "--tune unknown value" 2 $o run grey_erosion --size 3 --tune ecc.3d=new in/f32.npy $o
bad "tune: unknown option" 2 $o tune --frobnicate
bad "tune: bad workload" 2 $o tune --workload ecc:f32:2
bad "tune: no workload" 2 $o tune --only nothing_matches
bad "no command" 2 $o
bad "unknown command" 2 $o frobnicate
bad "unknown op" 2 $o run grey_frobnicate --size 3 in/f32.npy $o
bad "run without op" 2 $o run
bad "unknown option" 2 $o run grey_erosion --sise 3 in/f32.npy $o
bad "single-dash option" 2 $o run grey_erosion -s 3 in/f32.npy $o
bad "option of another command" 2 $o run grey_erosion --size 3 --arch sm_90 in/f32.npy $o
bad "missing value" 2 $o run grey_erosion in/f32.npy $o --size
bad "repeated option" 2 $o run grey_erosion --size 3 --size 2 in/f32.npy $o
for v in 0 -1 3,x x "" 3, ,3 3,,3 3.5 1e3 " 3" "3 " +-3 99999999999999999999 1,2,3,4,5,6,7,8,9; do
  bad "--size '$v'" 2 $o run grey_erosion --size "$v" in/f32.npy $o
done
for v in a 1,b "" 1.0 99999999999; do
  bad "--origin '$v'" 2 $o run grey_erosion --size 3 --origin "$v" in/f32.npy $o
done
for v in abc 1.5x "" 1e999 " 2"; do
  bad "--cval '$v'" 2 $o run grey_erosion --size 3 --mode constant --cval "$v" in/f32.npy $o
done
bad "bad --mode" 2 $o run grey_erosion --size 3 --mode reflekt in/f32.npy $o
bad "bad --device" 2 $o run grey_erosion --size 3 --device gpu in/f32.npy $o
bad "bad --batch-dims" 2 $o run grey_erosion --size 3 --batch-dims -1 in/f32.npy $o
bad "one file name" 2 $o run grey_erosion --size 3 in/f32.npy
bad "three file names" 2 $o run grey_erosion --size 3 in/f32.npy in/u8.npy $o
bad "unknown output type" 2 out/bad.txt run grey_erosion --size 3 in/f32.npy out/bad.txt
bad "unknown input type" 2 $o run grey_erosion --size 3 in/helper.txt $o
bad "cache warm without --dtype" 2 $o cache warm --arch sm_90 grey_erosion --size 3
bad "cache warm unknown op" 2 $o cache warm --arch sm_90 grey_foo --dtype float32 --size 3
bad "cache bad subcommand" 2 $o cache purge
bad "composite op: option of another command" 2 $o run white_tophat --size 3 --dtype uint8 in/u8.npy $o
# Binary ops take scipy's options of their function, and only those.
bad "binary: --cval" 2 $o run binary_erosion --cval 1 in/blob.npy $o
grep -q "^ndforge: option --cval does not apply to 'run binary_erosion' (it takes --structure" last.err &&
  pass || fail "binary: --cval message: $(cat last.err)"
bad "binary: --mode" 2 $o run binary_dilation --mode constant in/blob.npy $o
bad "binary: --size" 2 $o run binary_opening --size 3 in/blob.npy $o
bad "binary: --footprint" 2 $o run binary_closing --footprint in/bst.npy in/blob.npy $o
bad "grey: --iterations" 2 $o run grey_erosion --size 3 --iterations 2 in/f32.npy $o
bad "grey: --mask" 2 $o run white_tophat --size 3 --mask in/f32.npy in/f32.npy $o
bad "grey: --border-value" 2 $o run grey_dilation --size 3 --border-value 1 in/f32.npy $o
bad "propagation: --iterations" 2 $o run binary_propagation --iterations 2 in/blob.npy $o
bad "propagation: --brute-force" 2 $o run binary_propagation --brute-force in/blob.npy $o
bad "fill_holes: --mask" 2 $o run binary_fill_holes --mask in/bmask.npy in/blob.npy $o
bad "fill_holes: --border-value" 2 $o run binary_fill_holes --border-value 1 in/blob.npy $o
bad "hit_or_miss: --origin" 2 $o run binary_hit_or_miss --origin 1 in/blob.npy $o
bad "hit_or_miss: --structure" 2 $o run binary_hit_or_miss --structure in/bst.npy in/blob.npy $o
bad "erosion: --origin1" 2 $o run binary_erosion --origin1 1 in/blob.npy $o
bad "erosion: --structure2" 2 $o run binary_erosion --structure2 in/bst.npy in/blob.npy $o
for v in 2 -1 x "" 0.5 true; do
  bad "--border-value '$v'" 2 $o run binary_erosion --border-value "$v" in/blob.npy $o
done
for v in x "" 1.5 99999999999 2,2; do
  bad "--iterations '$v'" 2 $o run binary_dilation --iterations "$v" in/blob.npy $o
done
for v in maybe 2 "" yes; do
  bad "--brute-force='$v'" 2 $o run binary_erosion "--brute-force=$v" in/blob.npy $o
done
bad "--brute-force then three names" 2 $o run binary_erosion --brute-force in/blob.npy in/bst.npy $o
bad "--origin2 'a'" 2 $o run binary_hit_or_miss --origin2 a in/blob.npy $o
bad "binary op output .txt" 2 out/bad.txt run binary_erosion in/blob.npy out/bad.txt
bad "cache warm binary op --size" 2 $o cache warm --arch sm_90 binary_erosion --dtype uint8 --size 3
grep -q "^ndforge: 'binary_erosion' does not take --size" last.err && pass ||
  fail "cache warm binary --size message: $(cat last.err)"
# label takes --structure, --batch-dims (and --batch-axis), --output-dtype (and --device, --cpu-threads) only.
bad "label: --origin" 2 $o run label --origin 1 in/lab.npy $o
grep -q "^ndforge: option --origin does not apply to 'run label' (it takes --structure FILE, --output-dtype DTYPE, --batch-dims N, --batch-axis K, --device cpu|cuda|auto, --cpu-threads N, --tune NAME=VALUE)" last.err &&
  pass || fail "label: --origin message: $(cat last.err)"
bad "label: --mode" 2 $o run label --mode constant in/lab.npy $o
bad "label: --size" 2 $o run label --size 3 in/lab.npy $o
bad "label: --footprint" 2 $o run label --footprint in/lst.npy in/lab.npy $o
bad "label: --iterations" 2 $o run label --iterations 2 in/lab.npy $o
bad "label: --mask" 2 $o run label --mask in/lab.npy in/lab.npy $o
bad "label: --structure1" 2 $o run label --structure1 in/lst.npy in/lab.npy $o
bad "label: --dtype" 2 $o run label --dtype int16 in/lab.npy $o
bad "grey: --output-dtype" 2 $o run grey_erosion --size 3 --output-dtype int32 in/f32.npy $o
bad "binary: --output-dtype" 2 $o run binary_erosion --output-dtype uint8 in/blob.npy $o
for v in foo "" complex64 float16 1; do
  bad "label --output-dtype '$v'" 2 $o run label --output-dtype "$v" in/lab.npy $o
done
bad "label --output-dtype twice" 2 $o run label --output-dtype int32 --output-dtype=uint8 in/lab.npy $o
bad "label one file name" 2 $o run label in/lab.npy
bad "label output .txt" 2 out/bad.txt run label in/lab.npy out/bad.txt
bad "cache warm label --iterations" 2 $o cache warm --arch sm_90 label --dtype uint8 --iterations 2
bad "cache warm sinkhorn" 2 $o cache warm --arch sm_90 sinkhorn --dtype float32
grep -q "^ndforge: 'sinkhorn' cannot be warmed in this version" last.err && pass ||
  fail "cache warm sinkhorn message: $(cat last.err)"
bad "cache warm ect --size" 2 $o cache warm --arch sm_90 euler_characteristic_transform --dtype uint8 --size 3
bad "run --weighted" 2 $o run grey_erosion --size 3 --weighted in/f32.npy $o
bad "reconstruction without --mask" 2 $o run reconstruction in/u8.npy $o
grep -q "^ndforge: 'run reconstruction' needs --mask FILE" last.err && pass ||
  fail "missing --mask message: $(cat last.err)"
bad "reconstruction --method" 2 $o run reconstruction --mask in/u8.npy --method opening in/u8.npy $o
bad "cache warm reconstruction --mask" 2 $o cache warm --arch sm_90 reconstruction --mask in/u8.npy --dtype uint8
# skull_strip: BET's one-dash options, checked before anything is read or written.
bad "skull_strip -f out of range" 2 $o run skull_strip -f 1.5 in/i16.npy $o
bad "skull_strip -g out of range" 2 $o run skull_strip -g -3 in/i16.npy $o
bad "skull_strip -c of two values" 2 $o run skull_strip -c 1,2 in/i16.npy $o
bad "skull_strip --f" 2 $o run skull_strip --f 0.5 in/i16.npy $o
bad "skull_strip -f given twice" 2 $o run skull_strip -f 0.5 -f 0.4 in/i16.npy $o
bad "skull_strip of a 2-D image" 1 $o run skull_strip in/u8.npy $o
bad "skull_strip --sampling of two values" 1 $o run skull_strip --sampling 1,2 in/i16.npy $o
ndf run skull_strip -f 0.3 -g 0.1 --iterations 20 --device cpu in/i16.npy out/ss.npy &&
  "$py" -c "
import numpy as np
m = np.load('out/ss.npy')
assert m.dtype == np.bool_ and m.shape == (5, 6, 7)
" && pass || fail "skull_strip: $(cat last.err)"
# reconstruction (INPUT the seed, --mask the mask) against scikit-image where it is installed.
if "$py" -c 'import skimage.morphology' 2>/dev/null; then
  "$py" -c "
import numpy as np
m = np.random.default_rng(3).integers(0, 200, (2, 17, 19)).astype(np.uint8)
s = np.zeros_like(m); s[:, 5:8, 4:9] = m[:, 5:8, 4:9]
np.save('in/rmask.npy', m); np.save('in/rseed.npy', s)
np.save('in/rfp.npy', np.array([[1, 0], [1, 1], [0, 1]], np.uint8))"
  for dev in $devices; do
    ndf run reconstruction --mask in/rmask.npy --batch-dims 1 --device $dev in/rseed.npy out/rec.npy &&
      ndf run reconstruction --mask in/rseed.npy --method erosion --output-dtype uint8 --offset 1,0 --batch-dims 1 \
        --footprint in/rfp.npy --device $dev in/rmask.npy out/rec2.npy &&
      "$py" -c "
import numpy as np
from skimage.morphology import reconstruction
s, m = np.load('in/rseed.npy'), np.load('in/rmask.npy')
r, r2 = np.load('out/rec.npy'), np.load('out/rec2.npy')
assert r.dtype == np.float64 and r2.dtype == np.uint8
for b in range(2):
    assert (r[b] == reconstruction(s[b], m[b])).all()
    fp = np.pad(np.load('in/rfp.npy'), ((0, 0), (1, 0)))  # offset (1, 0) is the padded footprint's centre
    assert (r2[b] == reconstruction(m[b], s[b], method='erosion', footprint=fp)).all()
" && pass || fail "$dev reconstruction: $(cat last.err)"
  done
else
  echo "note: reconstruction vs scikit-image skipped (no skimage)"
fi
# structure generate / iterate.
bad "structure without subcommand" 2 $o structure
bad "structure bad subcommand" 2 $o structure make 2 1 $o
for v in 0 9 -1 x "" 2.0; do
  bad "structure generate rank '$v'" 2 $o structure generate "$v" 1 $o
done
bad "structure generate connectivity x" 2 $o structure generate 2 x $o
bad "structure generate two arguments" 2 $o structure generate 2 $o
bad "structure generate four arguments" 2 $o structure generate 2 1 $o out/bad2.npy
bad "structure generate --origin" 2 $o structure generate 2 1 $o --origin 1
bad "structure generate .txt" 2 out/bad.txt structure generate 2 1 out/bad.txt
bad "structure iterate iterations x" 2 $o structure iterate in/bst.npy x $o
bad "structure iterate iterations 1.5" 2 $o structure iterate in/bst.npy 1.5 $o
bad "structure iterate --cval" 2 $o structure iterate in/bst.npy 2 $o --cval 1
bad "structure iterate bad --origin" 2 $o structure iterate in/bst.npy 2 $o --origin 1,x
bad "structure iterate input .txt" 2 $o structure iterate in/bst.txt 2 $o

# ---------------------------------------------------------------------------
# Bad inputs and library errors: exit 1.
bad "missing input" 1 $o run grey_erosion --size 3 in/nonexistent.npy $o
mkdir -p in/adir.npy
bad "input is a directory" 1 $o run grey_erosion --size 3 in/adir.npy $o
for f in trunc trunc_hdr extra text empty badhdr overflow c64 f16 be rec big; do
  bad "bad .npy input: $f" 1 $o run grey_erosion --size 3 in/$f.npy $o
done
ndf run grey_erosion --size 3 in/c64.npy $o
grep -q "in/c64.npy" last.err && grep -q "c8" last.err && pass || fail "dtype message names file and dtype: $(cat last.err)"
bad "truncated .nii" 1 out/bad.nii run grey_erosion --size 3 in/vol_trunc.nii out/bad.nii
bad "truncated .nii.gz" 1 out/bad.nii.gz run grey_erosion --size 3 in/vol_trunc.nii.gz out/bad.nii.gz
ok_run "int64 .npy" grey_erosion in/i64.npy out/i64.npy "dict(size=3)" --size 3
ok_run "int64 NIfTI" median_filter in/vol_i64.nii.gz out/i64.nii.gz "dict(size=3)" --size 3
cp in/text.npy in/text.nii
bad "text file as NIfTI" 1 out/bad.nii run grey_erosion --size 3 in/text.nii out/bad.nii
bad "origin outside the footprint" 1 $o run grey_erosion --size 3 --origin 2 in/f32.npy $o
bad "origin outside footprint file" 1 $o run grey_erosion --footprint in/fp.npy --origin 0,1,0 in/f32.npy $o
bad "size count != ndim" 1 $o run grey_erosion --size 3,3 in/f32.npy $o
bad "no size, footprint or structure" 1 $o run grey_erosion in/f32.npy $o
bad "footprint rank mismatch" 1 $o run grey_erosion --footprint in/fp.npy in/u8.npy $o
bad "missing footprint file" 1 $o run grey_erosion --footprint in/nope.npy in/f32.npy $o
bad "bad footprint file" 1 $o run grey_erosion --footprint in/trunc.npy in/f32.npy $o
bad "output directory missing" 1 out/nodir/x.npy run grey_erosion --size 3 in/f32.npy out/nodir/x.npy
bad "output directory missing (NIfTI)" 1 out/nodir/x.nii.gz run grey_erosion --size 3 in/vol_u8.nii out/nodir/x.nii.gz
bad "NIfTI output of a 0-D array" any out/bad.nii.gz run grey_erosion --size 1 in/scalar.npy out/bad.nii.gz
if [ "$has_cuda" = 0 ]; then
  bad "--device cuda without a GPU" 1 $o run grey_erosion --size 3 --device cuda in/f32.npy $o
fi
# Composite ops: the library's message names the op's function.
composites="grey_opening grey_closing morphological_gradient morphological_laplace white_tophat black_tophat"
for op in $composites; do
  bad "$op: origin outside the element" 1 $o run $op --size 3 --origin 2 in/f32.npy $o
  grep -q "^ndforge: ndf_$op: bad argument 'origin'" last.err && pass || fail "$op: origin message: $(cat last.err)"
done
bad "grey_closing: footprint rank mismatch (NIfTI out)" 1 out/bad.nii.gz \
  run grey_closing --footprint in/fp2.npy in/vol_u8.nii out/bad.nii.gz
bad "morphological_laplace: size count != ndim" 1 $o run morphological_laplace --size 3,3 in/f32.npy $o
bad "cache warm composite bad origin" 1 $o cache warm --arch sm_90 black_tophat --dtype float32 --size 3 --origin 2
# Binary ops: the library's messages, exit 1.
bad "binary: mask shape mismatch" 1 $o run binary_erosion --mask in/bmask_bad.npy in/blob.npy $o
grep -q "^ndforge: ndf_binary_erosion: bad argument 'mask'" last.err && pass || fail "mask message: $(cat last.err)"
bad "propagation: mask shape mismatch" 1 $o run binary_propagation --mask in/bmask_bad.npy in/blob.npy $o
bad "binary: missing mask file" 1 $o run binary_dilation --mask in/nope.npy in/blob.npy $o
bad "binary: bad structure file" 1 $o run binary_dilation --structure in/trunc.npy in/blob.npy $o
bad "binary: structure rank mismatch" 1 $o run binary_erosion --structure in/st3f.npy in/blob.npy $o
bad "binary: origin outside the structure" 1 $o run binary_erosion --origin 2 in/blob.npy $o
bad "binary: origin count" 1 $o run binary_closing --origin 1,1,1 in/blob.npy $o
bad "binary: batch-dims too large" 1 $o run binary_fill_holes --batch-dims 2 in/blob.npy $o
bad "hit_or_miss: origin2 outside structure2" 1 $o run binary_hit_or_miss --structure2 in/hm2.npy --origin2 3 in/blob.npy $o
bad "hit_or_miss: structure1 rank mismatch" 1 $o run binary_hit_or_miss --structure1 in/st3f.npy in/blob.npy $o
# An off-centre structure makes the dilation oscillate: scipy would loop for ever.
bad "binary: iterations -1 never converges" 1 $o run binary_dilation --structure in/st101.npy --iterations -1 in/line.npy $o
grep -q "^ndforge: ndf_binary_dilation: bad argument 'iterations'" last.err && pass || fail "cycle message: $(cat last.err)"
bad "binary NIfTI output of a 0-D array" any out/bad.nii.gz run binary_erosion in/scalar.npy out/bad.nii.gz
# --device cuda: without a GPU the context's message; with one, the CPU's result.
for op in binary_erosion binary_fill_holes binary_hit_or_miss; do
  if [ "$has_cuda" = 1 ]; then
    ndf run $op --device cuda in/blob.npy out/gpu_$op.npy && ndf run $op --device cpu in/blob.npy out/cpu_$op.npy &&
      cmp -s out/gpu_$op.npy out/cpu_$op.npy && pass || fail "$op --device cuda differs from cpu: $(cat last.err)"
  else
    bad "$op --device cuda" 1 $o run $op --device cuda in/blob.npy $o
  fi
done
if [ "$has_cuda" = 1 ]; then
  ndf run binary_dilation --device cuda --iterations 3 --mask in/bmask.npy in/blob.npy out/gpu_dm.npy &&
    ndf run binary_dilation --device cpu --iterations 3 --mask in/bmask.npy in/blob.npy out/cpu_dm.npy &&
    cmp -s out/gpu_dm.npy out/cpu_dm.npy && pass || fail "binary_dilation --mask --device cuda differs from cpu"
else
  bad "binary --device cuda with mask" 1 $o run binary_dilation --device cuda --mask in/bmask.npy in/blob.npy $o
fi
bad "structure iterate missing input" 1 $o structure iterate in/nope.npy 2 $o
bad "structure iterate origin count" 1 $o structure iterate in/bst.npy 2 $o --origin 1,1,1
bad "structure iterate 0-D input" 1 $o structure iterate in/scalar.npy 2 $o
bad "structure iterate too large" 1 $o structure iterate in/st3f.npy 2000000000 $o
bad "structure generate into a missing directory" 1 out/nodir/s.npy structure generate 2 1 out/nodir/s.npy
# label: the library's messages, exit 1, nothing on stdout.
bad "label: non-symmetric structure" 1 $o run label --structure in/lst_nonsym.npy in/lab.npy $o
grep -q "^ndforge: ndf_label: bad argument 'structure'" last.err && grep -q symmetric last.err &&
  pass || fail "label non-symmetric structure message: $(cat last.err)"
[ -s last.out ] && fail "label failure printed on stdout: $(cat last.out)" || pass
bad "label: structure 3x2" 1 $o run label --structure in/lst_32.npy in/lab.npy $o
grep -q "^ndforge: ndf_label: bad argument 'structure'" last.err && pass || fail "label 3x2 structure message: $(cat last.err)"
bad "label: structure rank mismatch" 1 $o run label --structure in/lst.npy in/lab3.npy $o
bad "label: 3-D structure after --batch-dims 1" 1 $o run label --structure out/lgen32.npy --batch-dims 1 in/lab3.npy $o
bad "label: missing structure file" 1 $o run label --structure in/nope.npy in/lab.npy $o
bad "label: --batch-dims 2 of a 2-D input" 1 $o run label --batch-dims 2 in/lab.npy $o
grep -q "^ndforge: ndf_label: bad argument 'batch_dims'" last.err && pass || fail "label batch_dims message: $(cat last.err)"
for dt in uint8 int8; do
  bad "label: 301 features into $dt" 1 $o run label --output-dtype $dt in/many.npy $o
  grep -q "^ndforge: ndf_label: .*bit-depth" last.err && pass || fail "label $dt bit-depth message: $(cat last.err)"
  [ -s last.out ] && fail "label bit-depth failure printed on stdout: $(cat last.out)" || pass
done
bad "label: 301 features into uint8 (NIfTI)" 1 out/bad.nii.gz run label --output-dtype uint8 in/many.npy out/bad.nii.gz
bad "label: missing input" 1 $o run label in/nope.npy $o
bad "label: output directory missing" 1 out/nodir/l.npy run label in/lab.npy out/nodir/l.npy
[ -s last.out ] && fail "label write failure printed on stdout: $(cat last.out)" || pass
if [ "$has_cuda" = 1 ]; then
  ndf run label --device cuda in/lab.npy out/gpu_lab.npy && ndf run label --device cpu in/lab.npy out/cpu_lab.npy &&
    cmp -s out/gpu_lab.npy out/cpu_lab.npy && pass || fail "label --device cuda differs from cpu: $(cat last.err)"
  bad "label: 301 features into uint8 (CUDA)" 1 $o run label --device cuda --output-dtype uint8 in/many.npy $o
else
  bad "label --device cuda" 1 $o run label --device cuda in/lab.npy $o
fi

# ---------------------------------------------------------------------------
# Other commands.
ndf --help && grep -q 'ndforge run' last.out && pass || fail "--help"
ndf run --help && grep -q grey_erosion last.out && pass || fail "run --help"
for op in $composites; do
  grep -q "^  $op  *[a-z]" last.out || fail "run --help does not list $op"
done
ndf --help && grep -q 'morphological_laplace' last.out && grep -q 'black_tophat,' last.out &&
  grep -q 'binary_hit_or_miss,' last.out && grep -q ' label[.,]' last.out && grep -q 'distance_transform_bf' last.out &&
  pass || fail "--help lists the ops"
ndf run --help && grep -q '^  binary_hit_or_miss  *[a-z]' last.out && grep -q -- '--iterations' last.out &&
  pass || fail "run --help lists the binary ops and options"
ndf run binary_propagation --help && grep -q -- '--mask FILE' last.out && ! grep -q -- '--iterations' last.out &&
  pass || fail "run OP --help lists the op's options: $(cat last.out)"
ndf run --help && grep -q '^  label  *[a-z]' last.out && grep -q -- '--output-dtype' last.out &&
  pass || fail "run --help lists label and --output-dtype: $(cat last.out)"
ndf run label --help && grep -q -- '--structure FILE' last.out && grep -q -- '--output-dtype DTYPE' last.out &&
  grep -q -- '--batch-dims N' last.out && grep -q 'num_features' last.out && ! grep -q -- '--origin' last.out &&
  pass || fail "run label --help: $(cat last.out)"
ndf --help && grep -q 'structure generate' last.out && grep -q 'binary_fill_holes' last.out &&
  pass || fail "--help lists structure and the binary ops"
ndf structure --help && grep -q 'structure iterate IN ITERATIONS OUT' last.out &&
  pass || fail "structure --help: $(cat last.out last.err)"
ndf --version && grep -q '^ndforge [0-9]' last.out && pass || fail "--version"
ndf info && grep -q '^cache: *'"$NDF_CACHE_DIR" last.out && pass || fail "info: $(cat last.out last.err)"
ndf cache clear && pass || fail "cache clear: $(cat last.err)"
ndf cache list && grep -q '^0 entries' last.out && pass || fail "cache list (empty): $(cat last.out last.err)"
# cache warm needs NVRTC but no GPU; without NVRTC it must fail cleanly.
if ndf cache warm --arch sm_90 grey_erosion grey_dilation --dtype float32 --ndim 3 --size 3; then
  grep -q 'grey_erosion float32 3-D sm_90: compiled' last.out && pass || fail "cache warm output: $(cat last.out)"
  ndf cache list && ! grep -q '^0 entries' last.out && pass || fail "cache list after warm: $(cat last.out)"
  ndf cache warm --arch sm_90 grey_erosion --dtype float32 --size 3 &&
    grep -q 'compiled 0 kernels' last.out && pass || fail "cache warm twice: $(cat last.out last.err)"
  ndf cache clear && grep -q '^removed [1-9]' last.out && pass || fail "cache clear after warm: $(cat last.out)"
  # Composite ops warm their min/max steps and their elementwise epilogue.
  ndf cache warm --arch sm_90 $composites --dtype uint8 --ndim 2 --size 3 &&
    grep -q '^grey_opening uint8 2-D sm_90: compiled [1-9]' last.out &&
    [ "$(grep -c ' uint8 2-D sm_90: compiled' last.out)" -eq 6 ] &&
    pass || fail "cache warm composites: $(cat last.out last.err)"
  ndf cache warm --arch sm_90 $composites --dtype uint8 --ndim 2 --size 3 &&
    [ "$(grep -c 'compiled 0 kernels (all cached)' last.out)" -eq 6 ] &&
    pass || fail "cache warm composites twice: $(cat last.out last.err)"
  # Rank filters warm their specialization (window, rank, dtype, mode, NaN policy).
  ndf cache warm --arch sm_90 median_filter --dtype float32 --ndim 2 --size 5 &&
    grep -q '^median_filter float32 2-D sm_90: compiled 1 kernel$' last.out &&
    ndf cache warm --arch sm_90 percentile_filter --percentile 20 --dtype uint8 --ndim 3 --size 3 --mode wrap &&
    grep -q '^percentile_filter uint8 3-D sm_90: compiled 1 kernel$' last.out &&
    ndf cache warm --arch sm_90 median_filter --dtype float32 --ndim 2 --size 5 &&
    grep -q 'compiled 0 kernels (all cached)' last.out &&
    pass || fail "cache warm rank filters: $(cat last.out last.err)"
  # Binary ops, hit_or_miss and label warm their packed-word kernels; opening and
  # closing reuse erosion's and dilation's.
  ndf cache warm --arch sm_90 binary_erosion binary_dilation binary_opening binary_closing binary_propagation \
    binary_fill_holes binary_hit_or_miss label --dtype uint8 --ndim 3 &&
    grep -q '^binary_erosion uint8 3-D sm_90: compiled [1-9]' last.out &&
    grep -q '^binary_opening uint8 3-D sm_90: compiled 0 kernels (all cached)$' last.out &&
    grep -q '^label uint8 3-D sm_90: compiled [1-9]' last.out &&
    ndf cache warm --arch sm_90 label binary_fill_holes --dtype uint8 --ndim 3 &&
    [ "$(grep -c 'compiled 0 kernels (all cached)' last.out)" -eq 2 ] &&
    pass || fail "cache warm binary ops and label: $(cat last.out last.err)"
  ndf cache warm --arch sm_90 binary_dilation --iterations 3 --border-value 1 --dtype bool --ndim 2 &&
    ndf cache warm --arch sm_90 label --output-dtype uint16 --structure in/lst.npy --dtype float32 --ndim 2 &&
    grep -q '^label float32 2-D sm_90: compiled [1-9]' last.out &&
    pass || fail "cache warm binary options: $(cat last.out last.err)"
  # Distance transforms warm the passes their CUDA path picks (indices and
  # float32 distances are other kernels).
  ndf cache warm --arch sm_90 distance_transform_edt distance_transform_cdt distance_transform_bf --dtype uint8 \
    --ndim 3 && [ "$(grep -c ' uint8 3-D sm_90: compiled [1-9]' last.out)" -eq 3 ] &&
    ndf cache warm --arch sm_90 distance_transform_edt --indices $o --output-dtype float32 --dtype uint8 --ndim 3 &&
    grep -q '^distance_transform_edt uint8 3-D sm_90: compiled [1-9]' last.out && [ ! -e $o ] &&
    ndf cache warm --arch sm_90 distance_transform_edt distance_transform_cdt distance_transform_bf --dtype uint8 \
    --ndim 3 && [ "$(grep -c 'compiled 0 kernels (all cached)' last.out)" -eq 3 ] &&
    pass || fail "cache warm distance transforms: $(cat last.out last.err)"
  # The Euler characteristic transforms (an op of `ndforge ect`) take --construction and --weighted.
  ndf cache warm --arch sm_90 euler_characteristic_transform soft_ect --construction T --weighted --dtype float32 \
    --ndim 3 && [ "$(grep -c ' float32 3-D sm_90: compiled [1-9]' last.out)" -eq 2 ] &&
    pass || fail "cache warm ect: $(cat last.out last.err)"
  # Reconstruction: the step kernel depends on the method, the store on the output dtype.
  ndf cache warm --arch sm_90 reconstruction --method erosion --output-dtype uint8 --dtype uint8 --ndim 2 &&
    grep -q '^reconstruction uint8 2-D sm_90: compiled 3 kernels$' last.out &&
    ndf cache warm --arch sm_90 reconstruction --method erosion --output-dtype uint8 --dtype uint8 --ndim 2 &&
    grep -q '^reconstruction uint8 2-D sm_90: compiled 0 kernels (all cached)$' last.out &&
    pass || fail "cache warm reconstruction: $(cat last.out last.err)"
else
  if [ "$(wc -l < last.err)" -eq 1 ] && grep -qi 'nvrtc' last.err; then
    echo "note: cache warm skipped: $(cat last.err)"
  else
    fail "cache warm: $(cat last.err)"
  fi
fi
# --cpu-threads N: the same bytes with 1 and 2 threads on the CPU backend, for ops of several families and
# for the commands with their own parsers; 0, -1, 1025 and a word are refused (exit 2).
for spec in "run gaussian_filter --sigma 1.5 in/f32.npy" "run median_filter --size 3 in/f32.npy" \
            "run label in/u8.npy" "run distance_transform_edt in/u8.npy" "run zoom --zoom 1.5 in/f32.npy" \
            "run grey_opening --size 3 in/i16.npy" "ecc in/f32.npy"; do
  ok=1
  for t in 1 2; do
    # shellcheck disable=SC2086
    ndf $spec out/threads$t.npy --device cpu --cpu-threads $t || { ok=0; fail "$spec --cpu-threads $t: $(cat last.err)"; }
  done
  [ "$ok" = 1 ] && { cmp -s out/threads1.npy out/threads2.npy && pass || fail "$spec: --cpu-threads 1 and 2 differ"; }
done
for v in 0 -1 1025 two; do
  bad "run --cpu-threads $v" 2 out/threads_bad.npy run gaussian_filter --sigma 1 in/f32.npy out/threads_bad.npy --cpu-threads "$v"
done
bad "ecc --cpu-threads 0" 2 out/threads_bad.npy ecc in/f32.npy out/threads_bad.npy --cpu-threads 0
bad "metrics --cpu-threads 0" 2 out/threads_bad.npy metrics mse in/f32.npy in/f32.npy --cpu-threads 0

if [ "${NDF_TEST_DEMO:-1}" = 1 ]; then
  if ndf demo --out demo; then
    if grep -q 'ch2\|phantom' last.out && ls demo | grep -q '_dilated\.' && ls demo | grep -q '_eroded\.'; then
      pass
    else
      fail "demo output: $(cat last.out)"
    fi
    [ "$has_cuda" = 0 ] || grep -q '^GPU == CPU: yes' last.out && pass || fail "demo GPU == CPU"
    if ls demo | grep -q '^ch2_'; then
      ch2=/usr/share/mricron/templates/ch2.nii.gz
      "$py" helper.py compare grey_dilation $ch2 demo/ch2_dilated.nii.gz "dict(size=3)" &&
        "$py" helper.py compare grey_erosion $ch2 demo/ch2_eroded.nii.gz "dict(size=3)" &&
        pass || fail "demo results equal scipy's"
    fi
  else
    fail "demo: $(cat last.err)"
  fi
fi

echo "test_cli.sh: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
