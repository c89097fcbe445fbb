#!/usr/bin/env python3
"""oracle_ecc.py -- third-party cross-check of Euler characteristic curves.

Reads a case list written by tests/test_ecc.c, one line per image:
    PATH.npy CONSTRUCTION t0:chi0 t1:chi1 ...
and checks every chi against skimage.measure.euler_number of the binary
image {f <= t}: connectivity 1 (4-/6-connected foreground) for the
V-construction, connectivity ndim (8-/26-connected) for the T-construction.
Exits 0 when all agree, 1 on a mismatch, 77 when scikit-image is missing.
"""
import sys

import numpy as np

try:
    from skimage.measure import euler_number
except ImportError:
    sys.exit(77)


def main():
    bad = 0
    n = 0
    with open(sys.argv[1]) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            img = np.load(parts[0])
            conn = 1 if parts[1] == "V" else img.ndim
            for tc in parts[2:]:
                t, chi = tc.split(":")
                want = int(euler_number(img <= float(t), connectivity=conn))
                n += 1
                if want != int(chi):
                    bad += 1
                    if bad <= 10:
                        print(f"{parts[0]} {parts[1]} t={t}: chi {chi}, skimage {want}")
    print(f"oracle_ecc: {n} thresholds checked against skimage.measure.euler_number, {bad} differ")
    sys.exit(1 if bad else 0)


main()
