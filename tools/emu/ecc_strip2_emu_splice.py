# ecc_strip2_emu_splice.py ROOT OUT -- the parts of templates/ecc.cu that ndf_ecc_strip2 needs, with its
# __shared__ variables mapped onto the emulator's per-block storage and its inline-PTX helpers left out
# (tools/emu/ecc_strip2_emu.cpp defines them).
import sys
root, out = sys.argv[1], sys.argv[2]
s = open(root + '/templates/ecc.cu').read()
hs = open(root + '/templates/ndf_ecc_fused.cuh').read()  # the header struct lives there (with the prefix sums)
a = hs.index('struct ndf_ecc_hdr {'); b = hs.index('// Prefix sum of one image')
hdr = hs[a:b]
a = s.index('#define NDF_SW 128'); k = s[a:]
a = k.index('// NDF_ECC2_HELPERS_BEGIN'); b = k.index('// NDF_ECC2_HELPERS_END')
k = k[:a] + k[b:]
a = k.index('  __shared__ int shist['); b = k.index('  __shared__ bool s_last;')
b = k.index('\n', b) + 1
decl = k[a:b]
names = ['shist', 'tsf', 'tpair', 's_ga', 's_gb', 's_dl', 's_dh', 's_m', 'r_lo', 'r_hi', 'r_key', 's_last']
for n in names:
    assert n in decl, n
k = k[:a] + ''.join('  auto &%s = EMB().%s;\n' % (n, n) for n in names) + k[b:]
assert '__shared__' not in k[k.index('ndf_ecc_strip2(') :], 'unmapped shared variable'
open(out, 'w').write(hdr + k)
