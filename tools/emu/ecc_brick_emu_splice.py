# ecc_brick_emu_splice.py ROOT OUT -- the parts of templates/ecc.cu that ndf_ecc_brick needs (its own
# section only: the kernels after it, e.g. ndf_ecc_strip2, stay out), with its __shared__ variables
# mapped onto the emulator's per-block storage (tools/emu/ecc_brick_emu.cpp).
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ecc_splice as es
root, out = sys.argv[1], sys.argv[2]
s = es.read(root, 'ecc.cu')
binf = es.between(s, '// The exact bin of ndf_ecc_bin',
                  'extern "C" __global__ void __launch_bounds__(256, 4) ndf_ecc_pack(')
k = es.section(s, 'the brick kernel')
k = es.map_shared(k, [('extern __shared__ double dyn[];', 'double *dyn = (double *)EMB().dyn.data();'),
                      ('__shared__ float s_lo, s_inv, s_ga, s_gb;',
                       'float &s_lo = EMB().f[0], &s_inv = EMB().f[1], &s_ga = EMB().f[2], &s_gb = EMB().f[3];'),
                      ('__shared__ int s_uni, s_m;', 'int &s_uni = EMB().i[0], &s_m = EMB().i[1];'),
                      ('__shared__ bool s_last;', 'bool &s_last = EMB().last;')] + es.FUSED_SHARED[:2])
open(out, 'w').write(es.header(root) + binf + es.check(k, 'ndf_ecc_brick'))
