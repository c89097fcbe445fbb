# ecc_rows_emu_splice.py ROOT OUT -- templates/ecc_rows.cu (from its parameter struct on) and the
# fused pieces of templates/ndf_ecc_fused.cuh it calls, with the __shared__ variables mapped onto
# the emulator's per-block storage (tools/emu/ecc_rows_emu.cpp).
import sys
root, out = sys.argv[1], sys.argv[2]
hs = open(root + '/templates/ndf_ecc_fused.cuh').read()
a = hs.index('struct ndf_ecc_hdr {'); b = hs.index('// Prefix sum of one image')
hdr = hs[a:b]
a = hs.index('// ---- phase 1 and 2 of a fused launch')
fz = hs[a:]
s = open(root + '/templates/ecc_rows.cu').read()
a = s.index('struct ndf_ecc_rows_params {')
k = s[a:]
rep = [('__shared__ __align__(16) unsigned rpl[4 * NDF_RPL];', 'unsigned *rpl = EMB().rpl;'),
       ('__shared__ int shist[256];', 'int *shist = EMB().shist;'),
       ('extern __shared__ __align__(16) double dyn[];', 'double *dyn = (double *)EMB().dyn;'),
       ('__shared__ float s_lo, s_inv, s_ga, s_gb;', 'float &s_lo = EMB().f[0], &s_inv = EMB().f[1], &s_ga = EMB().f[2], &s_gb = EMB().f[3];'),
       ('__shared__ int s_uni, s_m;', 'int &s_uni = EMB().i[0], &s_m = EMB().i[1];'),
       ('__shared__ bool s_last;', 'bool &s_last = EMB().last;')]
for x, y in rep:
    assert x in k, x
    k = k.replace(x, y)
rep = [('__shared__ double r_lo[8], r_hi[8];', 'auto &r_lo = EMB().r_lo; auto &r_hi = EMB().r_hi;'),
       ('__shared__ unsigned long long r_key;', 'unsigned long long &r_key = EMB().r_key;'),
       ('__shared__ double q_lo[8], q_hi[8];', 'auto &q_lo = EMB().q_lo; auto &q_hi = EMB().q_hi;'),
       ('__shared__ unsigned long long q_key;', 'unsigned long long &q_key = EMB().q_key;')]
for x, y in rep:
    assert x in fz, x
    fz = fz.replace(x, y)
hook = 'else ndf_rows_red(shist, off, c);'
assert hook in k
k = k.replace(hook, hook + '\n        EMU_HOOK(img, z, y, xs + j + 8 * h, c, off / 4);')
for t in (k, fz):
    assert '__shared__' not in t, 'unmapped __shared__'
open(out, "w").write(hdr + fz + k)
import os
if os.environ.get("EMU_DBGPY"): os.system("python3 " + os.environ["EMU_DBGPY"] + " " + out)
