// elementwise.cu -- the NumPy arithmetic that ends a composite morphology op
// (gradient, laplace, tophats), in the input dtype: integers wrap around
// (computed in the unsigned type of the same width), float32 rounds after
// every step.
//   KIND 0:  out = a - b
//   KIND 1:  out = ((a + b) - c) - c
// out may alias a or b (each element is read before it is written).
#include "ndf_common.cuh"

typedef NDF_SLOT(T) T;
typedef NDF_SLOT(U) U;   /* unsigned type of T's width for integers; T for floats */
#define KIND NDF_SLOT(KIND)

NDF_PARAMS(ndf_ew_params)

extern "C" __global__ void __launch_bounds__(256) ndf_elementwise(const ndf_ew_params p) {
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 r = i, oa = 0, ob = 0, oc = 0, oo = 0;
    NDF_FOR_COORDS(r, p.ndim, p.shape, d, x,
                   oa += x * p.sa[d];
                   ob += x * p.sb[d];
                   oc += x * p.sc[d];
                   oo += x * p.so[d];)
#if KIND == 0
    p.out[oo] = (T)(U)((U)p.a[oa] - (U)p.b[ob]);
#else
    const U c = (U)p.c[oc];
    U t = (U)((U)p.a[oa] + (U)p.b[ob]);
    t = (U)(t - c);
    t = (U)(t - c);
    p.out[oo] = (T)t;
#endif
  }
}
