# ecc_pack_emu_splice.py ROOT OUT -- the parts of templates/ecc.cu that ndf_ecc_pack needs, with its
# __shared__ variables mapped onto the emulator's per-block storage (tools/emu/ecc_pack_emu.cpp).
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ecc_splice as es
root, out = sys.argv[1], sys.argv[2]
s = es.read(root, 'ecc.cu')
hdr = es.header(root)
a = s.index('struct ndf_ecc_params {'); b = s.index('#define NDF_BX')
par = s[a:b]
a = s.index('#define NDF_QW'); b = s.index("// ---- prefix sums in the caller's order")
k = s[a:b]
rep = [('__shared__ unsigned qpl[2][NDF_QS];', 'auto &qpl = *(unsigned (*)[2][NDF_QS])EMB().qpl;'),
       ('extern __shared__ double dyn[];', 'double *dyn = (double *)EMB().dyn;'),
       ('__shared__ float s_lo, s_inv;', 'float &s_lo = EMB().f[0], &s_inv = EMB().f[1];'),
       ('__shared__ int s_uni, s_nan, s_m;', 'int &s_uni = EMB().i[0], &s_nan = EMB().i[1], &s_m = EMB().i[2];'),
       ('__shared__ double r_lo[8], r_hi[8];', 'auto &r_lo = EMB().r_lo; auto &r_hi = EMB().r_hi;'),
       ('__shared__ unsigned long long r_key;', 'unsigned long long &r_key = EMB().r_key;'),
       ('__shared__ float s_ga, s_gb;', 'float &s_ga = EMB().g[0], &s_gb = EMB().g[1];'),
       ('__shared__ bool last;', 'bool &last = EMB().last;')]
k = es.check(es.map_shared(k, rep), 'ndf_ecc_pack')
open(out, 'w').write(hdr + par + k)
