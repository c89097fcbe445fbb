# ecc_brick_emu_splice.py ROOT OUT -- the parts of templates/ecc.cu that ndf_ecc_brick needs, with its
# __shared__ variables mapped onto the emulator's per-block storage (tools/emu/ecc_brick_emu.cpp).
import sys
root, out = sys.argv[1], sys.argv[2]
s = open(root + '/templates/ecc.cu').read()
hs = open(root + '/templates/ndf_ecc_fused.cuh').read()
a = hs.index('struct ndf_ecc_hdr {'); b = hs.index('// Prefix sum of one image')
hdr = hs[a:b]
a = s.index('// The exact bin of ndf_ecc_bin'); b = s.index('extern "C" __global__ void __launch_bounds__(256, 4) ndf_ecc_pack(')
binf = s[a:b]
a = s.index('// ---- the brick kernel')
k = s[a:]
rep = [('extern __shared__ double dyn[];', 'double *dyn = (double *)EMB().dyn.data();'),
       ('__shared__ float s_lo, s_inv, s_ga, s_gb;', 'float &s_lo = EMB().f[0], &s_inv = EMB().f[1], &s_ga = EMB().f[2], &s_gb = EMB().f[3];'),
       ('__shared__ int s_uni, s_m;', 'int &s_uni = EMB().i[0], &s_m = EMB().i[1];'),
       ('__shared__ bool s_last;', 'bool &s_last = EMB().last;'),
       ('__shared__ double r_lo[8], r_hi[8];', 'auto &r_lo = EMB().r_lo; auto &r_hi = EMB().r_hi;'),
       ('__shared__ unsigned long long r_key;', 'unsigned long long &r_key = EMB().r_key;')]
for x, y in rep:
    assert x in k, x
    k = k.replace(x, y)
assert '__shared__' not in k.replace('extern __shared__', ''), 'unmapped __shared__'
open(out, 'w').write(hdr + binf + k)
