#!/usr/bin/env bash
# test_cli_docs.sh -- runs every `ndforge` example of docs/cli.md and README.md.
#
#   tests/test_cli_docs.sh path/to/ndforge SCRATCH_DIR
#
# An example is a line of a fenced block opened by ``` or ```sh (```text,
# ```c ... are not read: the synopsis blocks are ```text) that starts with
# `ndforge ` or `build/tools/ndforge `, or assigns its output to a variable
# (`origin=$(ndforge ...)`); a line ending in `\` continues on the next.
# The examples of one document run in order in one shell (so a variable set
# by one is seen by the next), in SCRATCH_DIR, where every input file the
# examples name has been made small (a 16^3 volume, a 12x12 image, ...) and
# `ndforge` and `build/tools/ndforge` are the binary under test.  An example
# fails when it exits non-zero; the message names its document and line.
#
# What this machine may lack changes an example by these rules, and only these:
#   - `--device cuda` without a CUDA device (`ndforge info` says
#     "no CUDA device"): the example must fail cleanly instead: exit 1 and
#     one line, "ndforge: ..." with the reason ndf_ctx_create gave.
#   - `cache warm` without NVRTC (`ndforge info` says "NVRTC: not loaded"):
#     skipped.
# The kernel cache is a directory in SCRATCH_DIR.  Exits 77 (skipped) without
# a python3 that has numpy, which makes the inputs.
set -u
src=$(cd "$(dirname "$0")/.." && pwd) || exit 1
. "$src/tests/cli_common.sh"
cli_setup docs "numpy" "$@"
unset NDF_CACHE_DISABLE
export NDF_CACHE_DIR=$scratch/cache
nskip=0

# ---------------------------------------------------------------------------
# The inputs the examples name.  Shapes follow from the examples: a 2-D
# --sampling or --origin needs a 2-D image, --batch-dims 1 with a 3-D
# element a 4-D stack, a --grid 32,32 histogram 1024 bins.
"$py" - <<'PY' || { echo "FAIL: cannot make the inputs"; exit 1; }
import numpy as np
rng = np.random.default_rng(5)
vol = lambda *s: rng.random(s).astype(np.float32)
def blobs(*s):  # a 0/1 image with a few features and holes
    m = rng.random(s) < 0.35
    return m.astype(np.uint8)
def save(name, a): np.save(name, a)
save('brain.npy', vol(16, 16, 16) * 100)              # -> brain.nii.gz
save('fmri.npy', vol(10, 10, 10, 3) * 100)            # -> fmri.nii.gz, a 4-D time series
save('seeds.npy', (rng.random((16, 16, 16)) < 0.02).astype(np.uint8))  # -> seeds.nii.gz
save('mask3.npy', blobs(16, 16, 16))                  # -> mask.nii.gz
save('in.npy', vol(16, 16, 16))
save('stack.npy', blobs(3, 8, 12, 12))                # batch of 3-D images
save('mask.npy', blobs(12, 12))
save('cells.npy', blobs(12, 12))
save('vol.npy', vol(12, 12, 12))
save('img.npy', vol(12, 12, 12) * (rng.random((12, 12, 12)) < 0.6))
save('shape.npy', blobs(12, 12, 12))
save('batch.npy', vol(2, 10, 10, 10))
save('t.npy', np.linspace(0, 1, 33))
d = rng.normal(size=(8, 3))
save('dirs.npy', d / np.linalg.norm(d, axis=1, keepdims=True))
fp = np.zeros((3, 3, 3), bool); fp[1] = True; fp[:, 1, 1] = True
save('fp.npy', fp)
s1 = np.array([[0, 0, 0], [0, 1, 1], [0, 0, 0]], bool)
save('s1.npy', s1)
save('s2.npy', np.array([[0, 0, 0], [1, 0, 0], [0, 0, 0]], bool))
save('st.npy', np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool))
save('a.npy', rng.random(1024) + 0.01)                # (d,): one pair, so that 1000
save('b.npy', rng.random(1024) + 0.01)                # log-domain iterations take ~1 s
g = np.stack(np.meshgrid(np.arange(32), np.arange(32), indexing='ij'), -1).reshape(-1, 2)
c = np.sqrt(((g[:, None, :] - g[None, :, :]) ** 2).sum(-1))
save('C.npy', c / c.max())
PY
mkdir -p build/tools cache && ln -s "$cli" build/tools/ndforge || exit 1
ndforge() { "$cli" "$@"; }
# NIfTI inputs: the .npy ones converted by the binary (size 1 is the identity).
for f in brain:brain seeds:seeds mask3:mask fmri:fmri; do
  "$cli" run grey_erosion --size 1 --device cpu "${f%%:*}.npy" "${f##*:}.nii.gz" ||
    { echo "FAIL: cannot make ${f##*:}.nii.gz"; exit 1; }
done
# The structuring elements the examples make themselves are made here too, so
# each example can run on its own.
"$cli" structure generate 2 2 conn8.npy && "$cli" structure generate 3 3 conn26.npy &&
  "$cli" structure generate 3 1 cross.npy && "$cli" structure iterate cross.npy 3 ball.npy ||
  { echo "FAIL: cannot make the structures"; exit 1; }

"$cli" info > info.txt || { echo "FAIL: ndforge info"; exit 1; }
no_cuda=0 no_nvrtc=0
grep -q '^devices: *no CUDA device' info.txt && no_cuda=1
grep -q '^NVRTC: *not loaded' info.txt && no_nvrtc=1

# ---------------------------------------------------------------------------
# "LINE<TAB>COMMAND" for every example of a document.
examples() {
  awk '
    /^```/ {
      if (inblock) { inblock = 0; run = 0; next }
      inblock = 1; lang = substr($0, 4); run = (lang == "" || lang == "sh"); next
    }
    !run { next }
    cont != "" { cont = cont " " $0; if (cont !~ /\\$/) { print start "\t" cont; cont = "" } else sub(/\\$/, "", cont); next }
    /^(build\/tools\/)?ndforge / || /^[A-Za-z_][A-Za-z0-9_]*=\$\(ndforge / {
      if ($0 ~ /\\$/) { start = NR; cont = $0; sub(/\\$/, "", cont); next }
      print NR "\t" $0
    }' "$1"
}

for doc in README.md docs/cli.md; do
  n=0
  while IFS=$'\t' read -r line cmd; do
    n=$((n + 1))
    case $cmd in
      *" cache warm "*)
        if [ $no_nvrtc = 1 ]; then
          nskip=$((nskip + 1)); echo "SKIP: $doc:$line (no NVRTC): $cmd"; continue
        fi ;;
    esac
    t0=$(date +%s%N)
    eval "$cmd" > out.txt 2> err.txt
    rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    case $cmd in
      *"--device cuda"*)
        if [ $no_cuda = 1 ]; then
          if [ $rc = 1 ] && [ "$(wc -l < err.txt)" = 1 ] && grep -q '^ndforge: .*ndf_ctx_create' err.txt; then
            npass=$((npass + 1))
            echo "ok   $doc:$line (no GPU: exit 1, $(cat err.txt))"
          else
            fail "$doc:$line: without a GPU '$cmd' should exit 1 naming the missing device, got $rc: $(head -c 300 err.txt)"
          fi
          continue
        fi ;;
    esac
    if [ $rc = 0 ]; then
      npass=$((npass + 1))
      echo "ok   $doc:$line (${ms} ms): $cmd"
    else
      fail "$doc:$line: '$cmd' exited $rc: $(head -c 300 err.txt)"
    fi
  done < <(examples "$src/$doc")
  [ $n -gt 0 ] || fail "$doc: no examples found"
done
echo "$nskip skipped"
cli_summary
