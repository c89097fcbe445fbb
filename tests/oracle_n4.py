"""oracle_n4.py -- SimpleITK's N4 on the volume test_n4 prepared.

test_n4 writes into --out: input.npy (float32, the biased ch2), mask.npy
(uint8) and params.txt ("shrink S" and "iterations N,N,..."); this script
runs SimpleITK's N4BiasFieldCorrectionImageFilter with those parameters (the
others SimpleITK's defaults, which are ndforge's), the fit on the image shrunk
by S (sitk.Shrink) and the log field evaluated at full size
(GetLogBiasFieldAsImage), as the SimpleITK N4 example does, and writes
sitk_logb.npy (float64).  Without SimpleITK (pip install SimpleITK) it writes
skip.txt instead and exits 0, and test_n4 skips the comparison.
(--seed and --cases are accepted for tu_run_oracle and unused.)
"""
import argparse
import os

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", type=int, default=1)
    a = ap.parse_args()
    try:
        import SimpleITK as sitk
    except ImportError:
        with open(os.path.join(a.out, "skip.txt"), "w") as f:
            f.write("SimpleITK is not installed\n")
        return
    params = dict(line.split(None, 1) for line in open(os.path.join(a.out, "params.txt")) if line.strip())
    shrink = int(params["shrink"])
    iters = [int(v) for v in params["iterations"].split(",")]
    img = sitk.GetImageFromArray(np.load(os.path.join(a.out, "input.npy")))
    mask = sitk.GetImageFromArray(np.load(os.path.join(a.out, "mask.npy")))
    sitk.ProcessObject.SetGlobalDefaultNumberOfThreads(os.cpu_count() or 1)
    n4 = sitk.N4BiasFieldCorrectionImageFilter()
    n4.SetMaximumNumberOfIterations(iters)
    n4.Execute(sitk.Shrink(img, [shrink] * img.GetDimension()), sitk.Shrink(mask, [shrink] * img.GetDimension()))
    logb = sitk.GetArrayFromImage(n4.GetLogBiasFieldAsImage(img)).astype(np.float64)
    np.save(os.path.join(a.out, "sitk_logb.npy"), logb)


if __name__ == "__main__":
    main()
