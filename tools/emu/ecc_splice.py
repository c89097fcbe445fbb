# ecc_splice.py -- what the ecc_*_emu_splice.py scripts share (used by the brick and pack splices;
# the rows and strip2 splices, edited by other branches in session 8, can move to it after the merge): reading the templates, cutting a
# kernel's section out of templates/ecc.cu (from its '// ---- ' title line to the next one, so a
# kernel added after it is not dragged in), the header struct and the fused launch's phases of
# templates/ndf_ecc_fused.cuh, and mapping __shared__ declarations onto the emulators' per-block
# storage (EMB(), tools/emu/ecc_*_emu.cpp) -- refusing, with the line, any left unmapped.
import sys


def read(root, name):
    return open(root + '/templates/' + name).read()


def between(s, start, end=None):
    """s from the first `start` up to (not including) the first `end` after it (None: the end)."""
    a = s.index(start)
    return s[a:s.index(end, a)] if end else s[a:]


def section(s, title):
    """The section '// ---- <title>...' of a template, up to the next '// ---- ' section line."""
    a = s.index('// ---- ' + title)
    b = s.find('\n// ---- ', a + 1)
    return s[a:] if b < 0 else s[a:b + 1]


def header(root):
    """struct ndf_ecc_hdr and its check (ndf_ecc_fused.cuh), without the prefix sums and barrier."""
    return between(read(root, 'ndf_ecc_fused.cuh'), 'struct ndf_ecc_hdr {', '// Prefix sum of one image')


# The block reductions of the fused launch's phases (ndf_ecc_fused_partial, ndf_ecc_fused_thresholds).
FUSED_SHARED = [('__shared__ double r_lo[8], r_hi[8];', 'auto &r_lo = EMB().r_lo; auto &r_hi = EMB().r_hi;'),
                ('__shared__ unsigned long long r_key;', 'unsigned long long &r_key = EMB().r_key;'),
                ('__shared__ double q_lo[8], q_hi[8];', 'auto &q_lo = EMB().q_lo; auto &q_hi = EMB().q_hi;'),
                ('__shared__ unsigned long long q_key;', 'unsigned long long &q_key = EMB().q_key;')]


def fused_phases(root):
    """Phases 1 and 2 of a fused launch (ndf_ecc_fused.cuh), their __shared__ mapped."""
    fz = between(read(root, 'ndf_ecc_fused.cuh'), '// ---- phase 1 and 2 of a fused launch')
    return check(map_shared(fz, FUSED_SHARED), 'ndf_ecc_fused.cuh (fused phases)')


def map_shared(text, reps):
    """Each (declaration, replacement) of reps, which must occur in text."""
    for x, y in reps:
        if x not in text:
            sys.exit('splice: expected declaration not found (the template changed?): ' + x)
        text = text.replace(x, y)
    return text


def check(text, what, allow_extern=False):
    """text itself, after making sure no __shared__ declaration is left (the emulator has no shared memory)."""
    for n, line in enumerate(text.split('\n')):
        t = line.replace('extern __shared__', '') if allow_extern else line
        if '__shared__' in t and not t.lstrip().startswith('//'):
            sys.exit('splice: unmapped __shared__ in %s (line %d of the spliced part): %s' % (what, n + 1, line.strip()))
    return text
