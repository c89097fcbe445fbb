// filter_ew.cu -- the elementwise steps of the linear filters' compositions,
// in NumPy's arithmetic of the output dtype TO:
//   KIND 0  out = a converted (a: TI; NumPy's cast: integer to integer keeps
//           the low bits, from a float as filter_common.cuh converts)
//   KIND 1  out = out + a          (integers wrap around: UT arithmetic)
//   KIND 2  out = out * out
//   KIND 3  out = sqrt(out), np.sqrt(out, out, casting='unsafe'): floats in
//           their precision; integers floor(sqrt(v)), and for v < 0 the
//           conversion of NaN
#include "ndf_common.cuh"
#include "filter_common.cuh"

typedef NDF_SLOT(TI) TI;
typedef NDF_SLOT(TO) TO;
typedef NDF_SLOT(UT) UT;    // unsigned type of TO's width for integers; TO for floats
#define CVT NDF_SLOT(CVT)
#define KIND NDF_SLOT(KIND)
#define INTS NDF_SLOT(INTS)  // 1: TI and TO are both integers

NDF_PARAMS(ndf_few_params)

extern "C" __global__ void __launch_bounds__(256) ndf_filter_ew(const ndf_few_params p) {
  for (ndf_i64 i = (ndf_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (ndf_i64)gridDim.x * blockDim.x) {
    ndf_i64 r = i, oa = 0, oo = 0;
    NDF_FOR_COORDS(r, p.ndim, p.shape, d, x,
                   oa += x * p.sa[d];
                   oo += x * p.so[d];)
#if KIND == 0
#if INTS
    p.out[oo] = (TO)(unsigned long long)(long long)p.a[oa];
#else
    p.out[oo] = ndf_filter_cvt<CVT, TO>((double)p.a[oa]);
#endif
#elif KIND == 1
    p.out[oo] = (TO)(UT)((UT)p.out[oo] + (UT)p.a[oa]);
#elif KIND == 2
#if CVT == 2
    p.out[oo] = p.out[oo] * p.out[oo];
#else
    const unsigned long long v = (unsigned long long)(UT)p.out[oo];
    p.out[oo] = (TO)(UT)(v * v);
#endif
#else
    const TO v = p.out[oo];
#if CVT == 2
    p.out[oo] = (TO)sqrt(v);
#else
    p.out[oo] = v < (TO)0 ? ndf_filter_cvt<CVT, TO>(__longlong_as_double(0x7ff8000000000000ll))
                          : (TO)(long long)sqrt((double)v);
#endif
#endif
  }
}
