// sinkhorn_cluster_emu.cpp -- runs templates/sinkhorn_cluster.cu on the host (one std::thread per
// CUDA thread; warp, block and cluster barriers, shuffles and distributed-shared-memory stores
// emulated) and compares it with the CPU backend (float64 reference).  A development check of the
// kernel logic without a GPU (it cannot find races).  Build and run: tools/emu/sinkhorn_cluster_emu.sh.
#include "sinkhorn_cluster_emu.h"
#define NDF_SLOT(x) NDF_SLOT_##x
#include KERN_INC
extern "C" {
#include "ndforge.h"
}
static uint64_t sd = 12345;
static double urand() { sd = sd * 6364136223846793005ULL + 1442695040888963407ULL; return (double)(sd >> 11) * 0x1p-53; }
int main(int argc, char **argv) {
  const int n = atoi(argv[1]), P = atoi(argv[2]), iters = atoi(argv[3]), chk = atoi(argv[4]);
  const double eps = atof(argv[5]), tol = atof(argv[6]), zfrac = atof(argv[7]);
  const int d = N0 * N1;
  double maxc = 0;
  for (int s : {N0, N1}) maxc += P == 1 ? (s - 1) : (double)(s - 1) * (s - 1);
  const double scale = 1.0 / maxc;
  std::vector<double> A(n * d), B(n * d);
  for (auto *H : {&A, &B})
    for (int k = 0; k < n; k++) {
      double m = 0;
      for (int i = 0; i < d; i++) m += (*H)[k * d + i] = urand() < zfrac ? 0.0 : 0.05 + urand();
      if (m == 0) { (*H)[k * d] = 1; m = 1; }
      for (int i = 0; i < d; i++) (*H)[k * d + i] /= m;
    }
  // CPU reference
  ndf_ctx *ctx; ndf_ctx_options o; ndf_ctx_options_init(&o); o.backend = NDF_BACKEND_CPU; ndf_ctx_create(&ctx, &o);
  ndf_sinkhorn_options so; ndf_sinkhorn_options_init(&so);
  so.n = n; so.d = d; so.cost_kind = NDF_OT_COST_GRID_LP; so.grid_ndim = 2; so.grid_shape[0] = N0; so.grid_shape[1] = N1;
  so.p = P; so.grid_scale = scale; so.epsilon = eps; so.max_iter = iters; so.check_every = chk; so.tol = tol; so.log_domain = LOGD;
  ndf_sinkhorn *sk; if (ndf_sinkhorn_create(ctx, &sk, &so) != NDF_OK) { printf("create: %s\n", ndf_errmsg(ctx)); return 1; }
  std::vector<double> tc(n), obj(n), er(n), F(n * d), G(n * d); std::vector<int32_t> it(n);
  int64_t sh[2] = {n, d}; int64_t n1 = n;
  ndf_array Aa, Ba, Ta, Oa, Ea, Fa, Ga, Ia;
  ndf_array_init(&Aa, A.data(), NDF_DEVICE_CPU, NDF_FLOAT64, 2, sh); ndf_array_init(&Ba, B.data(), NDF_DEVICE_CPU, NDF_FLOAT64, 2, sh);
  ndf_array_init(&Ta, tc.data(), NDF_DEVICE_CPU, NDF_FLOAT64, 1, &n1); ndf_array_init(&Oa, obj.data(), NDF_DEVICE_CPU, NDF_FLOAT64, 1, &n1);
  ndf_array_init(&Ea, er.data(), NDF_DEVICE_CPU, NDF_FLOAT64, 1, &n1); ndf_array_init(&Ia, it.data(), NDF_DEVICE_CPU, NDF_INT32, 1, &n1);
  ndf_array_init(&Fa, F.data(), NDF_DEVICE_CPU, NDF_FLOAT64, 2, sh); ndf_array_init(&Ga, G.data(), NDF_DEVICE_CPU, NDF_FLOAT64, 2, sh);
  ndf_sinkhorn_result res = {&Ta, &Oa, &Fa, &Ga, &Ia, &Ea};
  ndf_status st = ndf_sinkhorn_solve(sk, &Aa, &Ba, &res);
  printf("CPU: %s %s\n", ndf_status_name(st), st ? ndf_errmsg(ctx) : "");
  // device emulation: params as runtime/sinkhorn_cuda.c builds them
  std::vector<T> a(n * d), b(n * d), x(n * d), y(n * d);
  for (int i = 0; i < n * d; i++) a[i] = (T)A[i], b[i] = (T)B[i];
  std::vector<int> its(n), fl(n); std::vector<double> err(n), tcd(n);
  int shape[2] = {N0, N1}; long long axoff[2]; long long tot = 0;
  for (int k = 0; k < 2; k++) { axoff[k] = tot; tot += shape[k] + 4; }
  std::vector<T> ax(2 * tot);
  for (int k = 0; k < 2; k++)
    for (int t = 0; t < shape[k] + 4; t++) {
      double c = (P == 1 ? (double)t : (double)t * t) * scale;
      ax[axoff[k] + t] = LOGD ? (T)(-c / eps) : (T)exp(-c / eps);
      ax[axoff[k] + t + tot] = LOGD ? (T)(-c / eps + log(c)) : (T)(exp(-c / eps) * c);
    }
  ndf_sk_params p{};
  p.a = a.data(); p.b = b.data(); p.x = x.data(); p.y = y.data(); p.iters = its.data(); p.fail = fl.data();
  p.err = err.data(); p.tc = tcd.data(); p.ax = ax.data(); p.n = n; p.d = d; p.axoff[0] = axoff[0]; p.axoff[1] = axoff[1];
  p.wofs = tot; p.axlen = 2 * tot; p.tol = tol; p.max_iter = iters; p.check_every = chk; p.use_smem = 1;
  for (int k = 0; k < n; k++) {
    emu_state E; EM = &E; E.CLn = CL; E.NTn = NT;
    for (int q = 0; q < CL; q++) { E.smem.push_back((char *)aligned_alloc(64, (sizeof(c_smem) + 63) / 64 * 64)); memset(E.smem.back(), 0xff, sizeof(c_smem)); }
    E.cbar.reset(new std::barrier<>(CL * NT));
    for (int q = 0; q < CL; q++) E.bbar.emplace_back(new std::barrier<>(NT));
    for (int q = 0; q < CL * NT / 32; q++) E.wbar.emplace_back(new std::barrier<>(32));
    E.shfl.resize(CL * NT);
    std::vector<std::thread> th;
    for (int t = 0; t < CL * NT; t++) th.emplace_back([&, t] { tl_tid = t % NT; tl_bid = k * CL + t / NT; ndf_sinkhorn_cluster(p); });
    for (auto &t : th) t.join();
    for (auto *m : E.smem) free(m);
  }
  int bad = 0;
  const double rt = sizeof(T) == 8 ? 1e-9 : 5e-4;
  for (int k = 0; k < n; k++) {
    double ox = 0;
    for (int i = 0; i < d; i++) {
      if (A[k * d + i] > 0) ox += A[k * d + i] * (double)x[k * d + i];
      if (B[k * d + i] > 0) ox += B[k * d + i] * (double)y[k * d + i];
    }
    ox *= eps;
    bool ok = st == NDF_OK ? (fl[k] == 0 && (sizeof(T) == 4 && tol > 0 || its[k] == it[k]) && fabs(tcd[k] - tc[k]) <= rt * fabs(tc[k]) + 1e-12 &&
                              fabs(ox - obj[k]) <= rt * fabs(obj[k]) + 1e-9 && fabs(err[k] - er[k]) <= (sizeof(T) == 8 ? 1e-6 : 0.5) * er[k] + (sizeof(T) == 8 ? 1e-10 : 1e-4))
                           : fl[k] != 0 || k > 0;
    if (!ok) bad++;
    printf("pair %d: it %d/%d fail %d tc %.12g/%.12g obj %.12g/%.12g err %.3g/%.3g %s\n", k, its[k], it[k], fl[k], tcd[k], tc[k], ox, obj[k], err[k], er[k], ok ? "ok" : "BAD");
  }
  printf("%s\n", bad ? "MISMATCH" : "ALL OK");
  return bad != 0;
}
