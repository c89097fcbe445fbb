// host cost of driver calls on the GPU machine (not part of ndforge)
#include <cuda.h>
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
#define CK(x) do { CUresult r_ = (x); if (r_) { printf("%s -> %d\n", #x, r_); return 1; } } while (0)
int main(void) {
  CUdevice d; CUcontext c; CUmodule m; CUfunction fe, fc; CUstream s;
  CK(cuInit(0)); CK(cuDeviceGet(&d, 0)); CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
  CK(cuModuleLoad(&m, "k.cubin")); CK(cuModuleGetFunction(&fe, m, "empty")); CK(cuModuleGetFunction(&fc, m, "coop"));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUmemoryPool pool; CK(cuDeviceGetDefaultMemPool(&pool, d));
  CUdeviceptr buf; CK(cuMemAlloc(&buf, 1 << 20));
  void *args[] = {&buf};
  const int N = 2000;
  double t0; CUdeviceptr p;
  for (int rep = 0; rep < 2; rep++) {
    t0 = now(); for (int i = 0; i < N; i++) cuLaunchKernel(fe, 4, 1, 1, 256, 1, 1, 0, s, args, 0); double a = (now() - t0) / N; cuStreamSynchronize(s);
    t0 = now(); for (int i = 0; i < N; i++) cuLaunchCooperativeKernel(fc, 4, 1, 1, 256, 1, 1, 0, s, args); double b = (now() - t0) / N; cuStreamSynchronize(s);
    t0 = now(); for (int i = 0; i < N; i++) cuLaunchCooperativeKernel(fc, 512, 1, 1, 256, 1, 1, 0, s, args); double b2 = (now() - t0) / N; cuStreamSynchronize(s);
    t0 = now(); for (int i = 0; i < N; i++) { cuMemAllocFromPoolAsync(&p, 4096, pool, s); cuMemFreeAsync(p, s); } double c2 = (now() - t0) / N; cuStreamSynchronize(s);
    t0 = now(); for (int i = 0; i < N; i++) cuMemsetD8Async(buf, 0, 4096, s); double e = (now() - t0) / N; cuStreamSynchronize(s);
    t0 = now(); for (int i = 0; i < N; i++) { cuLaunchKernel(fe, 4, 1, 1, 256, 1, 1, 0, s, args, 0); cuStreamSynchronize(s); } double f = (now() - t0) / N;
    t0 = now(); for (int i = 0; i < N; i++) { cuLaunchCooperativeKernel(fc, 4, 1, 1, 256, 1, 1, 0, s, args); cuStreamSynchronize(s); } double g = (now() - t0) / N;
    t0 = now(); for (int i = 0; i < N; i++) { cuLaunchCooperativeKernel(fc, 512, 1, 1, 256, 1, 1, 0, s, args); cuStreamSynchronize(s); } double g2 = (now() - t0) / N;
    CUevent e0, e1; cuEventCreate(&e0, 0); cuEventCreate(&e1, 0);
    t0 = now(); for (int i = 0; i < N; i++) { cuEventRecord(e0, s); cuLaunchKernel(fe, 4, 1, 1, 256, 1, 1, 0, s, args, 0); cuEventRecord(e1, s); cuEventSynchronize(e1); } double h = (now() - t0) / N;
    float ms; cuEventElapsedTime(&ms, e0, e1);
    printf("us per call: launch %.2f, coop launch 4 blocks %.2f, 512 blocks %.2f, pool alloc+free %.2f, memset %.2f | launch+sync %.2f, coop4+sync %.2f, coop512+sync %.2f, ev+launch+ev+sync %.2f (last event pair %.4f ms)\n", a, b, b2, c2, e, f, g, g2, h, ms);
  }
  return 0;
}
