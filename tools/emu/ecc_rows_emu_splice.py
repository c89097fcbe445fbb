# ecc_rows_emu_splice.py ROOT OUT -- templates/ecc_rows.cu (from its parameter struct on) and the
# fused pieces of templates/ndf_ecc_fused.cuh it calls, with the __shared__ variables mapped onto
# the emulator's per-block storage (tools/emu/ecc_rows_emu.cpp).
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ecc_splice as es
root, out = sys.argv[1], sys.argv[2]
k = es.between(es.read(root, 'ecc_rows.cu'), 'struct ndf_ecc_rows_params {')
k = es.map_shared(k, [('__shared__ __align__(16) unsigned rpl[4 * NDF_RPL];', 'unsigned *rpl = EMB().rpl;'),
                      ('__shared__ int shist[256];', 'int *shist = EMB().shist;'),
                      ('extern __shared__ double dyn[];', 'double *dyn = (double *)EMB().dyn;'),
                      ('__shared__ float s_lo, s_inv, s_ga, s_gb;',
                       'float &s_lo = EMB().f[0], &s_inv = EMB().f[1], &s_ga = EMB().f[2], &s_gb = EMB().f[3];'),
                      ('__shared__ int s_uni, s_m;', 'int &s_uni = EMB().i[0], &s_m = EMB().i[1];'),
                      ('__shared__ bool s_last;', 'bool &s_last = EMB().last;')])
hook = 'else ndf_rows_red(shist, off, c);'
assert hook in k
k = k.replace(hook, hook + '\n        EMU_HOOK(img, z, y, xs + j + 8 * h, c, off / 4);')
open(out, "w").write(es.header(root) + es.fused_phases(root) + es.check(k, 'ndf_ecc_rows'))
if os.environ.get("EMU_DBGPY"): os.system("python3 " + os.environ["EMU_DBGPY"] + " " + out)
