// launch_latency.cu -- what a launch costs in ndf_bench's one-call-at-a-time timing (events around each
// call, then a sync): an empty kernel with a parameter block the size of the warp-strip kernels'
// (~640 bytes), 256 threads per block, grids of 129 and 513 blocks, as a plain and as a cooperative
// launch.  Median event time and host time of the launch call over 2000 calls; then the same
// launches queued behind a gate (the GPU's own cost per call, as ndf_bench's gated timing).
// Build and run on the GPU machine:
//   nvcc -O2 -arch=sm_90 -o /tmp/ll tools/launch_latency.cu && /tmp/ll
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

struct params {
  long long f[80]; // 640 bytes, as ndf_ecc2_params with its four 12-entry shape / stride arrays
};
__global__ void __launch_bounds__(256, 4) empty_kernel(const params p) {
  if (p.f[0] == 12345 && threadIdx.x == 0) *(volatile long long *)p.f[1] = 1; // never: keeps p live
}

// the parameter block's size alone (queued cooperative launches of grid 129): 16 .. 4096 bytes
template <int N> struct pblock {
  long long f[N / 8];
};
template <int N> __global__ void __launch_bounds__(256, 4) sized_kernel(const pblock<N> p) {
  if (p.f[0] == 12345 && threadIdx.x == 0) *(volatile long long *)p.f[N / 8 - 1] = 1; // never
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// 5 x 200 calls of launch(), each between two events, enqueued behind a host function that holds the
// stream until all are queued: the median event time per call (us)
template <class F> static double queued(cudaStream_t s, F launch) {
  const int n = 200;
  std::vector<cudaEvent_t> e(2 * n);
  for (auto &x : e) cudaEventCreate(&x);
  std::vector<double> ev;
  for (int rep = 0; rep < 5; rep++) {
    volatile int release = 0;
    cudaLaunchHostFunc(s, [](void *r) { while (!*(volatile int *)r) {} }, (void *)&release);
    for (int i = 0; i < n; i++) {
      cudaEventRecord(e[2 * i], s);
      launch();
      cudaEventRecord(e[2 * i + 1], s);
    }
    release = 1;
    cudaStreamSynchronize(s);
    for (int i = 0; i < n; i++) {
      float ms = 0;
      cudaEventElapsedTime(&ms, e[2 * i], e[2 * i + 1]);
      ev.push_back(ms * 1e3);
    }
  }
  for (auto &x : e) cudaEventDestroy(x);
  return median(ev);
}
template <int N> static double queued_sized(cudaStream_t s);

int main() {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  params p{};
  for (int coop = 0; coop < 2; coop++)
    for (unsigned grid : {129u, 513u}) {
      std::vector<double> ev, host;
      for (int i = 0; i < 2100; i++) {
        cudaEventRecord(a, s);
        auto t0 = std::chrono::steady_clock::now();
        if (coop) {
          void *args[] = {&p};
          cudaLaunchCooperativeKernel((void *)empty_kernel, dim3(grid), dim3(256), args, 0, s);
        } else {
          empty_kernel<<<grid, 256, 0, s>>>(p);
        }
        auto t1 = std::chrono::steady_clock::now();
        cudaEventRecord(b, s);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        if (i >= 100) {
          ev.push_back(ms * 1e3);
          host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
      }
      printf("%-11s grid %4u: event time median %.2f us, launch call median %.2f us (%s)\n",
             coop ? "cooperative" : "plain", grid, median(ev), median(host), cudaGetErrorString(cudaGetLastError()));
    }
  // queued (as ndf_bench's gated timing, used where a call does not wait for its kernel): the GPU's own
  // cost of a launch (no host in it)
  for (int coop = 0; coop < 2; coop++)
    for (unsigned grid : {129u, 513u}) {
      const double t = queued(s, [&] {
        if (coop) {
          void *args[] = {&p};
          cudaLaunchCooperativeKernel((void *)empty_kernel, dim3(grid), dim3(256), args, 0, s);
        } else {
          empty_kernel<<<grid, 256, 0, s>>>(p);
        }
      });
      printf("%-11s grid %4u queued: event time median %.2f us (%s)\n", coop ? "cooperative" : "plain", grid, t,
             cudaGetErrorString(cudaGetLastError()));
    }
  printf("queued cooperative grid 129 by parameter bytes: 16 %.2f, 128 %.2f, 640 %.2f, 2048 %.2f, 4096 %.2f us\n",
         queued_sized<16>(s), queued_sized<128>(s), queued_sized<640>(s), queued_sized<2048>(s), queued_sized<4096>(s));
  return 0;
}

template <int N> static double queued_sized(cudaStream_t s) {
  pblock<N> p{};
  return queued(s, [&] {
    void *args[] = {&p};
    cudaLaunchCooperativeKernel((void *)sized_kernel<N>, dim3(129), dim3(256), args, 0, s);
  });
}
