// ndf_rank.cuh -- what the rank-filter templates share: the rank scipy
// selects among m values.  The including template defines RKIND (0 median,
// 1 rank, 2 percentile) and RPARAM (the rank or the percentile) first.
#pragma once

// Median m//2; rank as given (already in [0, n)); percentile int(m*p/100), m-1 for p = 100.
__device__ __forceinline__ int ndf_rank_of(int m) {
#if RKIND == 0
  return m / 2;
#elif RKIND == 1
  return (int)(RPARAM);
#else
  return (RPARAM) == 100.0 ? m - 1 : (int)((double)m * (RPARAM) / 100.0);
#endif
}
