#!/usr/bin/env bash
# test_cli_hostile.sh -- the `ndforge` command on hostile input.
#
#   tests/test_cli_hostile.sh path/to/ndforge SCRATCH_DIR
#
# Files whose headers lie (sizes that overflow, NIfTI offsets outside the
# file, gzip streams without their trailer, a header declaring 2 GiB over a
# few bytes of data), outputs that cannot all be written, FIFOs where files
# are expected, unusable cache directories and command lines the docs call
# usage errors.  Each case checks the exit status (2: bad command line, 1:
# failure), that stderr is one "ndforge: ..." line naming the problem, and
# that an output file present before the call is left byte for byte as it
# was.  The inputs are built with Python's struct and gzip modules (no
# NumPy); exits 77 (skipped) without a python3.
set -u
. "$(dirname "$0")/cli_common.sh"
cli_setup hostile "struct, gzip" "$@"

# Crafted inputs.
"$py" - <<'PY' || exit 1
import gzip, struct

def npy(path, descr, shape, data=b''):
    sh = '(' + ', '.join(str(x) for x in shape) + (',' if len(shape) == 1 else '') + ')'
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, sh)
    h += ' ' * (63 - (10 + len(h)) % 64) + '\n'
    open(path, 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode() + data)

npy('huge.npy', '|u1', (2**61, 0, 3))                 # empty, but 2^61 images with --batch-dims 1
npy('img.npy', '<f4', (4, 5), struct.pack('<20f', *range(20)))
npy('dirs.npy', '<f8', (2, 2), struct.pack('<4d', 1, 0, 0, 1))
npy('hist.npy', '<f8', (1, 4), struct.pack('<4d', 1, 1, 1, 1))
npy('m.npy', '|u1', (5, 6), bytes(1 if i % 4 else 0 for i in range(30)))
npy('a441.npy', '<f4', (4, 4, 1), struct.pack('<16f', *range(16)))
npy('row.npy', '|b1', (1, 1000), b'\x01' * 1000)
npy('big.npy', '<f4', (40, 40, 40), struct.pack('<64000f', *[(i * 7919 % 1000) / 7.0 for i in range(64000)]))
PY

# expect CASE RC WORDS -- cmd...: runs cmd with "keep" already at every path
# in $outs, then checks the status, one stderr line starting "ndforge: " with
# every '|'-separated word of WORDS, and that each of $outs still says "keep".
outs=""
expect() {
  local what=$1 want=$2 words=$3
  shift 3
  local o
  for o in $outs; do printf 'keep\n' > "$o"; done
  timeout 60 "$@" > out.txt 2> err.txt
  local rc=$? ok=1
  [ "$rc" -eq "$want" ] || { fail "$what: exit $rc, want $want ($(cat err.txt))"; ok=0; }
  if [ "$want" -ne 0 ]; then
    [ "$(wc -l < err.txt)" -eq 1 ] && grep -q '^ndforge: ' err.txt ||
      { fail "$what: stderr is not one 'ndforge: ' line: $(cat err.txt)"; ok=0; }
    local w
    local IFS='|'
    for w in $words; do
      grep -qF -- "$w" err.txt || { fail "$what: the message lacks '$w': $(cat err.txt)"; ok=0; }
    done
    unset IFS
    for o in $outs; do
      [ "$(cat "$o" 2>/dev/null)" = keep ] || { fail "$what: $o was written or removed"; ok=0; }
    done
  fi
  [ "$ok" -eq 1 ] && npass=$((npass + 1))
  for o in $outs; do rm -f "$o"; done
  return 0
}

# 1, 2, 11: sizes that overflow
outs="o.npy"
expect "ecc of 2^61 empty images" 1 "output|2305843009213693952x2|NDF_MAX_BYTES" \
  "$cli" ecc huge.npy o.npy --batch-dims 1 --range 0,1 --thresholds 2
expect "ect of 2^61 empty images" 1 "output|2305843009213693952x2x2" \
  "$cli" ect huge.npy dirs.npy o.npy --batch-dims 1 --range 0,1 --thresholds 2
expect "sinkhorn grid of 2^80 bins" 2 "--grid|2^63-1" \
  "$cli" sinkhorn hist.npy hist.npy o.npy --epsilon 1 --max-iter 2 --grid 1048576,1048576,1048576,1048576
outs=""
expect "ecc of one empty image" 0 "" "$cli" ecc huge.npy e.npy --range 0,1 --thresholds 2

# 4: every output or none
printf 'keep\n' > d.npy
outs="d.npy"
expect "edt with an unwritable --indices" 1 "/nonexistent/ix.npy" \
  "$cli" run distance_transform_edt m.npy d.npy --indices /nonexistent/ix.npy
outs="o.npy"
expect "ecc with an unwritable --thresholds-out" 1 "/nonexistent/t.npy" \
  "$cli" ecc img.npy o.npy --thresholds 4 --thresholds-out /nonexistent/t.npy
expect "ect with an unwritable --thresholds-out" 1 "/nonexistent/t.npy" \
  "$cli" ect img.npy dirs.npy o.npy --thresholds 4 --thresholds-out /nonexistent/t.npy
outs="o.npy"
expect "edt with --indices the output itself" 1 "same file" \
  "$cli" run distance_transform_edt m.npy o.npy --indices o.npy
[ -z "$(ls -a | grep ndftmp)" ] && npass=$((npass + 1)) || fail "temporary files left: $(ls -a | grep ndftmp)"

# 5: a trailing unit axis survives a NIfTI round trip
outs=""
for ext in nii nii.gz; do
  expect "write (4, 4, 1) as .$ext" 0 "" "$cli" run grey_erosion a441.npy "a441.$ext" --size 1
  expect "read (4, 4, 1) from .$ext" 0 "" "$cli" run grey_erosion "a441.$ext" back.npy --size 1
  head -c 128 back.npy | grep -qaF "'shape': (4, 4, 1)" && npass=$((npass + 1)) ||
    fail ".$ext round trip of (4, 4, 1): $(head -c 128 back.npy | tr -d '\0')"
done

# 6, 7, 8: NIfTI headers that lie, gzip streams cut short
expect "write a 40^3 NIfTI" 0 "" "$cli" run grey_erosion big.npy big.nii --size 1
"$py" - <<'PY' || exit 1
import gzip, struct
raw = open('a441.nii', 'rb').read()
for name, v in [('vo100', 100.0), ('voneg', -5.0), ('vonan', float('nan')), ('vobig', 1e12), ('vofrac', 352.5)]:
    d = bytearray(raw)
    struct.pack_into('<f', d, 108, v)
    open(name + '.nii', 'wb').write(d)
d = bytearray(raw)
struct.pack_into('<f', d, 108, 400.0)  # the data would end past the file
open('voend.nii', 'wb').write(d)
big = open('big.nii', 'rb').read()
gz = gzip.compress(big)
open('notrailer.nii.gz', 'wb').write(gz[:-8])
open('badcrc.nii.gz', 'wb').write(gz[:-8] + bytes([gz[-8] ^ 1]) + gz[-7:])
open('half.nii.gz', 'wb').write(gz[:len(gz) // 2])
h = bytearray(raw[:352])
struct.pack_into('<8h', h, 40, 3, 1024, 1024, 512, 1, 1, 1, 1)  # 2 GiB of float32 declared
open('liar.nii.gz', 'wb').write(gzip.compress(bytes(h) + b'\0' * 16))
open('liar.nii', 'wb').write(bytes(h) + b'\0' * 16)
PY
outs="o.npy"
for f in vo100 voneg vonan vobig vofrac; do
  expect "vox_offset of $f.nii" 1 "$f.nii|vox_offset" "$cli" run grey_erosion "$f.nii" o.npy --size 1
done
expect "data past the end of voend.nii" 1 "voend.nii|truncated" "$cli" run grey_erosion voend.nii o.npy --size 1
expect ".nii.gz without its trailer" 1 "notrailer.nii.gz|trailer" \
  "$cli" run grey_erosion notrailer.nii.gz o.npy --size 1
expect ".nii.gz with a bad CRC" 1 "badcrc.nii.gz|check" "$cli" run grey_erosion badcrc.nii.gz o.npy --size 1
expect ".nii.gz cut in half" 1 "half.nii.gz|truncated" "$cli" run grey_erosion half.nii.gz o.npy --size 1
# 2 GiB declared over 16 bytes: refused without allocating it (1 GiB of address
# space is plenty; a sanitizer build cannot start under that limit and runs without)
limit="ulimit -v 1048576;"
bash -c "$limit"' "$0" --version > /dev/null 2>&1' "$cli" 2> /dev/null || limit=""
expect ".nii.gz declaring 2 GiB" 1 "liar.nii.gz|truncated" \
  bash -c "$limit"' exec "$0" run grey_erosion liar.nii.gz o.npy --size 1' "$cli"
expect ".nii declaring 2 GiB" 1 "liar.nii|truncated" \
  bash -c "$limit"' exec "$0" run grey_erosion liar.nii o.npy --size 1' "$cli"

# 9: a legal output name that leaves no room for a temporary suffix
long=$(printf 'n%.0s' $(seq 1 246)).npy
outs=""
expect "a 250-character output name" 0 "" "$cli" run grey_erosion img.npy "$long" --size 3
[ -s "$long" ] && npass=$((npass + 1)) || fail "the 250-character output was not written"
rm -f "$long"

# 10: FIFOs are refused, not waited on
mkfifo fifo.npy fifo.nii
outs="o.npy"
expect "a FIFO as .npy input" 1 "fifo.npy|not a regular file" "$cli" run grey_erosion fifo.npy o.npy --size 3
expect "a FIFO as NIfTI input" 1 "fifo.nii|not a regular file" "$cli" run grey_erosion fifo.nii o.npy --size 3
mkdir fifocache
mkfifo fifocache/0123456789abcdef.ndfk fifocache/nvrtc.id
outs=""
expect "a FIFO among the cache entries" 0 "" env -u NDF_CACHE_DISABLE NDF_CACHE_DIR="$PWD/fifocache" "$cli" cache list
timeout 60 env -u NDF_CACHE_DISABLE NDF_CACHE_DIR="$PWD/fifocache" "$cli" cache warm grey_erosion --dtype float32 \
  --arch sm_90 --size 3 > /dev/null 2>&1
[ $? -ne 124 ] && npass=$((npass + 1)) || fail "cache warm waited on a FIFO named nvrtc.id"

# 12: bounded work
outs="o.npy"
expect "ecc --thresholds beyond 2^30" 2 "--thresholds" "$cli" ecc img.npy o.npy --thresholds 1073741825
expect "structure iterate of 1x1000 2,000,000 times" 1 "NDF_MAX_STRUCTURE_ELEMENTS" \
  "$cli" structure iterate row.npy 2000000 o.npy

# 13: cache problems reported as what they are
printf 'x' > afile
expect "cache directory that is a file" 1 "afile|not a directory" \
  env -u NDF_CACHE_DISABLE NDF_CACHE_DIR="$PWD/afile" "$cli" cache list
expect "cache directory under a file" 1 "afile/sub|not a directory" \
  env -u NDF_CACHE_DISABLE NDF_CACHE_DIR="$PWD/afile/sub" "$cli" cache list
longdir=$PWD/$(printf 'd%.0s' $(seq 1 4100))
expect "cache directory path over 4,095 bytes" 1 "NDF_CACHE_DIR|long" \
  env -u NDF_CACHE_DISABLE NDF_CACHE_DIR="$longdir" "$cli" cache list
[ -z "$(ls -d dddd* 2>/dev/null)" ] && npass=$((npass + 1)) || fail "a directory was created for a cut path"
# a directory nothing can be written to (procfs, read-only even for root): warm must not claim it stored
timeout 60 env -u NDF_CACHE_DISABLE NDF_CACHE_DIR=/proc/self "$cli" cache warm grey_erosion --dtype float32 \
  --arch sm_90 --size 3 > out.txt 2> err.txt
rc=$?
if [ "$rc" -eq 1 ] && ! grep -q compiled out.txt && [ "$(wc -l < err.txt)" -eq 1 ]; then
  npass=$((npass + 1))
else
  fail "cache warm into /proc/self: exit $rc, stdout '$(cat out.txt)', stderr '$(cat err.txt)'"
fi

# 15: exit statuses as documented
outs="o.npy"
expect "cache warm with an option the op does not take" 2 "--size" \
  "$cli" cache warm distance_transform_edt --dtype float32 --arch sm_90 --size 3
outs="s.txt"
expect "sinkhorn into an unknown format" 2 "s.txt" \
  "$cli" sinkhorn hist.npy hist.npy s.txt --epsilon 1 --max-iter 2 --grid 4
outs="o.npy"
expect "ect --spacing ," 2 "--spacing" "$cli" ect img.npy dirs.npy o.npy --spacing ,
expect "ect --spacing 1,,2" 2 "--spacing" "$cli" ect img.npy dirs.npy o.npy --spacing 1,,2
expect "structure generate" 0 "" "$cli" structure generate 2 1 s3.npy
expect "structure iterate --origin 2147483647" 1 "origin[0]=2147483647" \
  "$cli" structure iterate s3.npy 3 o.npy --origin 2147483647

cli_summary
