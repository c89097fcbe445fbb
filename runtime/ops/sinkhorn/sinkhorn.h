/*
 * sinkhorn/sinkhorn.h -- Sinkhorn: the CUDA backend (docs/adr/0010).
 */
#ifndef NDF_OPS_SINKHORN_H
#define NDF_OPS_SINKHORN_H

#include "internal.h"

/* ---- sinkhorn_cuda.c: the CUDA backend of ndf_sinkhorn (docs/adr/0010) ------------------ */
typedef struct ndf__sk_cuda ndf__sk_cuda;
/* Host data of the cost, as sinkhorn.c builds it (float64): dense C, M (the
 * kernel, K or L) and MT (its transpose; may equal M); grid euclidean T, TM
 * (tables by offset).  Grid L^p needs none (the 1-D kernels are rebuilt). */
typedef struct ndf__sk_host_cost {
  const double *C, *M, *MT, *T, *TM;
  int c_symmetric;
} ndf__sk_host_cost;
/* Compiles the kernel and allocates every device buffer (owned). */
ndf_status ndf__sk_cuda_create(ndf_ctx *ctx, const ndf_sinkhorn_options *opt, const ndf__sk_host_cost *hc,
                               ndf__sk_cuda **out);
void ndf__sk_cuda_destroy(ndf__sk_cuda *g);
/* Solves the n pairs of A, B ((n, d) float64, validated): alpha, beta
 * receive the scaled potentials f/eps, g/eps (log form, -inf at zero bins;
 * alpha NULL: left on the device, see ndf__sk_cuda_potentials), fail[k] the
 * breakdown iteration of the scaling form (0: none). */
ndf_status ndf__sk_cuda_solve(ndf__sk_cuda *g, const double *A, const double *B, double *alpha, double *beta,
                              int32_t *iters, double *err, double *tc, int *fail);
/* The scaled potentials of the last solve, downloaded ((n, d) float64 each). */
ndf_status ndf__sk_cuda_potentials(ndf__sk_cuda *g, double *alpha, double *beta);

#endif
