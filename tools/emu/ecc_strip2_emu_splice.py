# ecc_strip2_emu_splice.py ROOT OUT -- the parts of templates/ecc.cu that ndf_ecc_strip2, ndf_ecc_strip3
# and ndf_ecc_strip2t need (their sections: the shared phases, the kernels), with their __shared__ variables mapped onto
# the emulator's per-block storage and the inline-PTX helpers left out (tools/emu/ecc_strip2_emu.cpp
# defines them).
import re
import sys
sys.path.insert(0, __import__('os').path.dirname(__file__))
import ecc_splice as es

root, out = sys.argv[1], sys.argv[2]
s = es.read(root, 'ecc.cu')
k2 = es.section(s, 'the 2-D warp-strip kernel')
k3 = es.section(s, 'the 3-D warp-strip kernel')
k2t = es.section(s, 'the 2-D telescoped kernel')
a = k2.index('// NDF_ECC2_HELPERS_BEGIN')
b = k2.index('// NDF_ECC2_HELPERS_END')
k2 = k2[:a] + k2[b:]
a = k3.index('// NDF_ECC3_HELPERS_BEGIN')
b = k3.index('// NDF_ECC3_HELPERS_END')
k3 = k3[:a] + k3[b:]


def map_kernel(k, name):
    """Every __shared__ declaration after `name` (a kernel's name and its parenthesis, or a macro's
    #define) as references into EMB()."""
    a = k.index(name)
    head, body = k[:a], k[a:]
    def rep(m):
        ind, names = m.group(1), m.group(2)
        out = []
        for part in names.split(','):
            n = re.match(r'\s*\**\s*(\w+)', part).group(1)
            out.append('auto &%s = EMB().%s;' % (n, n))
        return ind + ' '.join(out)
    body = re.sub(r'^(\s*)(?:extern )?__shared__ (?:__align__\(\d+\) )?(?:unsigned long long|unsigned|int|float2|float|bool|double) ([^;]*?)(?:\[[^\]]*\])?;',
                  lambda m: rep(re.match(r'(\s*)(.*)', m.group(1) + re.sub(r'\[[^\]]*\]', '', m.group(2)))), body, flags=re.M)
    return head + body


k2 = map_kernel(k2, 'ndf_ecc_strip2(')
k3 = map_kernel(k3, '#define NDF_ECC_TELE_KERNEL')
open(out, 'w').write(es.header(root) + es.check(k2, 'ndf_ecc_strip2') + es.check(k3, 'ndf_ecc_strip3') +
                     es.check(k2t, 'ndf_ecc_strip2t'))
