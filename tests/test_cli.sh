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
    np.save('in/i64.npy', np.zeros((4, 4), np.int64))
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
    nifti_write('in/vol_i64.nii.gz', np.zeros((4, 4, 4), np.int64))
    blob = open('in/vol_u8.nii', 'rb').read()
    open('in/vol_trunc.nii', 'wb').write(blob[:len(blob) - 10])
    blob = gzip.open('in/vol.nii.gz').read()
    with gzip.open('in/vol_trunc.nii.gz', 'wb') as f:
        f.write(blob[:len(blob) - 100])

def check_same(want, got, what):
    if got.dtype != want.dtype or got.shape != want.shape:
        sys.exit('%s: got %s %s, want %s %s' % (what, got.dtype, got.shape, want.dtype, want.shape))
    if not np.array_equal(got, want, equal_nan=want.dtype.kind == 'f'):
        bad = np.argwhere(~((got == want) | (np.isnan(got) & np.isnan(want))
                            if want.dtype.kind == 'f' else got == want))
        sys.exit('%s: %d of %d values differ, first at %s: got %r want %r' % (
            what, len(bad), got.size, tuple(bad[0]), got[tuple(bad[0])], want[tuple(bad[0])]))

def compare(op, inp, out, kwargs):
    kw = eval(kwargs, {'np': np, 'load': load})
    want = getattr(ndi, op)(load(inp), **kw)
    check_same(want, load(out), '%s %s' % (op, kwargs))

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
        img = nibabel.load(sys.argv[2])
        check_same(np.asanyarray(img.dataobj), load(sys.argv[3]), 'nibabel')
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
# one python (a python with scipy takes ~0.2 s to start).
nqueued=0
: > queue.tsv
queue_run() {
  local desc=$1 op=$2 in=$3 kw=$4
  shift 4
  nqueued=$((nqueued + 1))
  local out=out/q$nqueued.npy
  rm -f "$out"
  if ! ndf run "$op" "$@" "$in" "$out"; then
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
# Bad command lines: exit 2.
o=out/bad.npy
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

# ---------------------------------------------------------------------------
# Bad inputs and library errors: exit 1.
bad "missing input" 1 $o run grey_erosion --size 3 in/nonexistent.npy $o
mkdir -p in/adir.npy
bad "input is a directory" 1 $o run grey_erosion --size 3 in/adir.npy $o
for f in trunc trunc_hdr extra text empty badhdr overflow c64 i64 f16 be rec big; do
  bad "bad .npy input: $f" 1 $o run grey_erosion --size 3 in/$f.npy $o
done
ndf run grey_erosion --size 3 in/c64.npy $o
grep -q "in/c64.npy" last.err && grep -q "c8" last.err && pass || fail "dtype message names file and dtype: $(cat last.err)"
bad "truncated .nii" 1 out/bad.nii run grey_erosion --size 3 in/vol_trunc.nii out/bad.nii
bad "truncated .nii.gz" 1 out/bad.nii.gz run grey_erosion --size 3 in/vol_trunc.nii.gz out/bad.nii.gz
bad "int64 NIfTI" 1 out/bad.nii.gz run grey_erosion --size 3 in/vol_i64.nii.gz out/bad.nii.gz
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

# ---------------------------------------------------------------------------
# Other commands.
ndf --help && grep -q 'ndforge run' last.out && pass || fail "--help"
ndf run --help && grep -q grey_erosion last.out && pass || fail "run --help"
for op in $composites; do
  grep -q "^  $op  *[a-z]" last.out || fail "run --help does not list $op"
done
ndf --help && grep -q 'morphological_laplace' last.out && grep -q 'black_tophat\.' last.out &&
  pass || fail "--help lists the ops"
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
else
  if [ "$(wc -l < last.err)" -eq 1 ] && grep -qi 'nvrtc' last.err; then
    echo "note: cache warm skipped: $(cat last.err)"
  else
    fail "cache warm: $(cat last.err)"
  fi
fi
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
