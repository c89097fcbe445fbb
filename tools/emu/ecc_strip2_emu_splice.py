# ecc_strip2_emu_splice.py ROOT OUT -- the parts of templates/ecc.cu that ndf_ecc_strip2 needs, with its
# __shared__ variables mapped onto the emulator's per-block storage and its inline-PTX helpers left out
# (tools/emu/ecc_strip2_emu.cpp defines them).
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ecc_splice as es
root, out = sys.argv[1], sys.argv[2]
s = es.read(root, 'ecc.cu')
hdr = es.header(root)  # the header struct lives in ndf_ecc_fused.cuh (with the prefix sums)
a = s.index('#define NDF_SW 128'); k = s[a:]
a = k.index('// NDF_ECC2_HELPERS_BEGIN'); b = k.index('// NDF_ECC2_HELPERS_END')
k = k[:a] + k[b:]
a = k.index('  __shared__ int shist['); b = k.index('  __shared__ bool s_last;')
b = k.index('\n', b) + 1
decl = k[a:b]
names = ['shist', 'tsf', 'tpair', 's_ga', 's_gb', 's_m', 'r_lo', 'r_hi', 'r_key', 's_last']
for n in names:
    assert n in decl, n
k = k[:a] + ''.join('  auto &%s = EMB().%s;\n' % (n, n) for n in names) + k[b:]
es.check(k[k.index('ndf_ecc_strip2('):], 'ndf_ecc_strip2')
open(out, 'w').write(hdr + k)
