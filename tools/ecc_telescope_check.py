# ecc_telescope_check.py [SEED] -- checks the telescoped cell sums of ndf_ecc_strip3 and (2-D)
# ndf_ecc_strip2t (docs/adr/0009, "Telescoped cells") against a brute-force oracle that lists every
# cell of the cubical complex on the doubled grid (V: a cell's bin is the max over its vertices; T:
# the min over the voxels it touches), on random small 2-D and 3-D bin arrays with ties, both
# constructions (3-D: chunks of W = 3 columns with the left edge form and the right halo voxel).
# Prints "bad 0" when every histogram agrees.  Needs numpy (/usr/bin/python3 on Debian with
# python3-numpy).
import itertools
import sys

import numpy as np
rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv)>1 else 1)
def oracle(b, cons, T):
    # b: int bins (nz,ny,nx); V: cell value = max over vertices; T: min over adjacent voxels. hist of (-1)^dim
    n = b.shape; h = np.zeros(T+1, np.int64)
    if cons == 0:
        for c in itertools.product(*[range(2*m-1) for m in n]):
            verts = [tuple((ci//2 + d) for ci, d in zip(c, ds)) for ds in itertools.product(*[(0,1) if ci%2 else (0,) for ci in c])]
            v = max(b[t] for t in verts); dim = sum(ci%2 for ci in c)
            h[v] += (-1)**dim
    else:
        # T: doubled coords 0..2m : even = point (between voxels i-1 and i), odd = interval (voxel (c-1)/2)
        for c in itertools.product(*[range(2*m+1) for m in n]):
            opts = []
            for ci, m in zip(c, n):
                if ci % 2: opts.append([(ci-1)//2])
                else: opts.append([i for i in (ci//2-1, ci//2) if 0 <= i < m])
            vox = list(itertools.product(*opts))
            v = min(b[t] for t in vox); dim = sum(ci%2 for ci in c)
            h[v] += (-1)**dim
    return h[:T]
def tele(b, cons, T):
    BINF = T
    nz, ny, nx = b.shape
    agg = max if cons == 0 else min
    h = np.zeros(T+1, np.int64)
    def B(z, y, x):
        if 0 <= z < nz and 0 <= y < ny and 0 <= x < nx: return int(b[z, y, x])
        return BINF
    off = -1 if cons else 0
    for z in range(off, nz):
        for y in range(off, ny):
            seqs = []
            for sgn, cells in ((1, [(0,0)]), (-1, [(0,0),(0,1)]), (-1, [(0,0),(1,0)]), (1, [(0,0),(0,1),(1,0),(1,1)])):
                a = [agg(B(z+dz, y+dy, x) for dz, dy in cells) for x in range(nx + 1)]  # a[nx] = pad
                seqs.append((sgn, a))
            # lanes: chunks of W along x with the left edge form
            W = 3
            for x0 in range(0, nx, W):
                for sgn, a in seqs:
                    g = lambda i: 1 if a[i+1] > a[i] else 0
                    w = min(W, nx - x0)
                    for i in range(x0, x0 + w):
                        c = g(i) - (g(i-1) if i > x0 else 0)
                        h[a[i]] += sgn * c
                    i = x0 + w  # the right halo: -g(last)
                    h[a[i] if i <= nx else BINF] += sgn * (-g(x0 + w - 1))
    return h[:T]
def tele2(b, cons, T):
    # 2-D (ndf_ecc_strip2t): s0 = b(y), s1 = agg(b(y), b(y + 1)) along x, signs (+, -) for V and
    # (-, +) for T (rows from -1)
    ny, nx = b.shape
    agg = max if cons == 0 else min
    h = np.zeros(T+1, np.int64)
    B = lambda y, x: int(b[y, x]) if 0 <= y < ny and 0 <= x < nx else T
    for y in range(-1 if cons else 0, ny):
        for sgn, cells in zip((-1, 1) if cons else (1, -1), ([0], [0, 1])):
            a = [agg(B(y+dy, x) for dy in cells) for x in range(nx + 1)]
            for i in range(nx):
                g = 1 if a[i+1] > a[i] else 0
                h[a[i]] += sgn * g
                h[a[i+1]] -= sgn * g
    return h[:T]
bad = 0
# (number of arrays, axes, largest side + 1, the telescoped sum): 2-D (strip2t), then 3-D (strip3)
for n, nd, hi, fn in ((200, 2, 6, tele2), (60, 3, 5, tele)):
    for it in range(n):
        shp = tuple(int(v) for v in rng.integers(1, hi, nd)); T = int(rng.integers(2, 6))
        b = rng.integers(0, T, shp)
        for cons in (0, 1):
            o, t = oracle(b, cons, T), fn(b, cons, T)
            if not np.array_equal(o, t): bad += 1; print('BAD %d-D' % nd, shp, T, cons, o, t)
print('bad', bad)
