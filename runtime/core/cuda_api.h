/*
 * cuda_api.h -- the subset of the CUDA driver API and NVRTC that ndforge uses,
 * declared here so the library builds without CUDA headers, and resolved at
 * run time with dlopen("libcuda.so.1") / dlopen("libnvrtc.so...").  The types
 * and values below are the ABI of cuda.h / nvrtc.h (CUDA 11.2 and later).
 */
#ifndef NDF_CUDA_API_H
#define NDF_CUDA_API_H
#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct _nvrtcProgram *nvrtcProgram;
typedef int nvrtcResult;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR 81
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_STREAM_NON_BLOCKING 1
#define CU_MEMHOSTALLOC_DEVICEMAP 2
#define CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE 720
#define CUDA_ERROR_NOT_SUPPORTED 801
#define CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4
#define CU_MEM_ALLOCATION_TYPE_PINNED 1
#define CU_MEM_LOCATION_TYPE_DEVICE 1

/* CUmemPoolProps (cuda.h, CUDA 11.2 and later: the last 64 bytes were
 * reserved then, maxSize and usage since 12.x; zero means the default). */
typedef struct ndf__cu_mempool_props {
  int alloc_type;  /* CU_MEM_ALLOCATION_TYPE_PINNED */
  int handle_types;
  struct { int type, id; } location;
  void *win32_security_attributes;
  unsigned char reserved[64];
} ndf__cu_mempool_props;
#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1

/* X(return, name, symbol, args): every driver entry point we resolve. */
#define NDF_CU_FUNCS(X)                                                                   \
  X(CUresult, cuInit, "cuInit", (unsigned int))                                           \
  X(CUresult, cuDriverGetVersion, "cuDriverGetVersion", (int *))                          \
  X(CUresult, cuDeviceGetCount, "cuDeviceGetCount", (int *))                              \
  X(CUresult, cuDeviceGet, "cuDeviceGet", (CUdevice *, int))                              \
  X(CUresult, cuDeviceGetName, "cuDeviceGetName", (char *, int, CUdevice))                \
  X(CUresult, cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *, int, CUdevice))       \
  X(CUresult, cuDeviceTotalMem, "cuDeviceTotalMem_v2", (size_t *, CUdevice))              \
  X(CUresult, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice)) \
  X(CUresult, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice))      \
  X(CUresult, cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext))                            \
  X(CUresult, cuCtxGetCurrent, "cuCtxGetCurrent", (CUcontext *))                          \
  X(CUresult, cuStreamCreate, "cuStreamCreate", (CUstream *, unsigned int))               \
  X(CUresult, cuStreamDestroy, "cuStreamDestroy_v2", (CUstream))                          \
  X(CUresult, cuStreamSynchronize, "cuStreamSynchronize", (CUstream))                     \
  X(CUresult, cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t))                       \
  X(CUresult, cuMemFree, "cuMemFree_v2", (CUdeviceptr))                                   \
  X(CUresult, cuMemAllocAsync, "cuMemAllocAsync", (CUdeviceptr *, size_t, CUstream))      \
  X(CUresult, cuMemFreeAsync, "cuMemFreeAsync", (CUdeviceptr, CUstream))                  \
  X(CUresult, cuMemPoolCreate, "cuMemPoolCreate", (CUmemoryPool *, const ndf__cu_mempool_props *)) \
  X(CUresult, cuMemPoolDestroy, "cuMemPoolDestroy", (CUmemoryPool))                       \
  X(CUresult, cuMemPoolSetAttribute, "cuMemPoolSetAttribute", (CUmemoryPool, int, void *)) \
  X(CUresult, cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", (CUdeviceptr *, size_t, CUmemoryPool, CUstream)) \
  X(CUresult, cuMemAllocHost, "cuMemAllocHost_v2", (void **, size_t))                    \
  X(CUresult, cuMemFreeHost, "cuMemFreeHost", (void *))                                   \
  X(CUresult, cuMemHostAlloc, "cuMemHostAlloc", (void **, size_t, unsigned int))          \
  X(CUresult, cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", (CUdeviceptr *, void *, unsigned int)) \
  X(CUresult, cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", \
    (int *, CUfunction, int, size_t))                                                     \
  X(CUresult, cuMemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr, const void *, size_t))       \
  X(CUresult, cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void *, CUdeviceptr, size_t))             \
  X(CUresult, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", (CUdeviceptr, const void *, size_t, CUstream)) \
  X(CUresult, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", (void *, CUdeviceptr, size_t, CUstream)) \
  X(CUresult, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", (CUdeviceptr, CUdeviceptr, size_t, CUstream)) \
  X(CUresult, cuMemsetD8Async, "cuMemsetD8Async", (CUdeviceptr, unsigned char, size_t, CUstream)) \
  X(CUresult, cuModuleLoadData, "cuModuleLoadData", (CUmodule *, const void *))           \
  X(CUresult, cuModuleUnload, "cuModuleUnload", (CUmodule))                               \
  X(CUresult, cuModuleGetFunction, "cuModuleGetFunction", (CUfunction *, CUmodule, const char *)) \
  X(CUresult, cuFuncSetAttribute, "cuFuncSetAttribute", (CUfunction, int, int))           \
  X(CUresult, cuLaunchKernel, "cuLaunchKernel",                                           \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,    \
     CUstream, void **, void **))                                                         \
  X(CUresult, cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel",                     \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,    \
     CUstream, void **))                                                                  \
  X(CUresult, cuStreamBeginCapture, "cuStreamBeginCapture_v2", (CUstream, int))         \
  X(CUresult, cuStreamEndCapture, "cuStreamEndCapture", (CUstream, CUgraph *))            \
  X(CUresult, cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",                 \
    (CUgraphExec *, CUgraph, unsigned long long))                                         \
  X(CUresult, cuGraphLaunch, "cuGraphLaunch", (CUgraphExec, CUstream))                    \
  X(CUresult, cuGraphExecDestroy, "cuGraphExecDestroy", (CUgraphExec))                    \
  X(CUresult, cuGraphDestroy, "cuGraphDestroy", (CUgraph))                                \
  X(CUresult, cuGetErrorName, "cuGetErrorName", (CUresult, const char **))                \
  X(CUresult, cuGetErrorString, "cuGetErrorString", (CUresult, const char **))

#define NDF_NVRTC_FUNCS(X)                                                                \
  X(nvrtcResult, nvrtcVersion, "nvrtcVersion", (int *, int *))                            \
  X(nvrtcResult, nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", (int *))         \
  X(nvrtcResult, nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", (int *))               \
  X(nvrtcResult, nvrtcCreateProgram, "nvrtcCreateProgram",                                \
    (nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *)) \
  X(nvrtcResult, nvrtcDestroyProgram, "nvrtcDestroyProgram", (nvrtcProgram *))            \
  X(nvrtcResult, nvrtcCompileProgram, "nvrtcCompileProgram", (nvrtcProgram, int, const char *const *)) \
  X(nvrtcResult, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", (nvrtcProgram, size_t *)) \
  X(nvrtcResult, nvrtcGetProgramLog, "nvrtcGetProgramLog", (nvrtcProgram, char *))        \
  X(nvrtcResult, nvrtcGetCUBINSize, "nvrtcGetCUBINSize", (nvrtcProgram, size_t *))        \
  X(nvrtcResult, nvrtcGetCUBIN, "nvrtcGetCUBIN", (nvrtcProgram, char *))                  \
  X(nvrtcResult, nvrtcGetPTXSize, "nvrtcGetPTXSize", (nvrtcProgram, size_t *))            \
  X(nvrtcResult, nvrtcGetPTX, "nvrtcGetPTX", (nvrtcProgram, char *))                      \
  X(const char *, nvrtcGetErrorString, "nvrtcGetErrorString", (nvrtcResult))

#define NDF__DECL_FN(ret, name, sym, args) ret(*name) args;
typedef struct ndf__cu_api { NDF_CU_FUNCS(NDF__DECL_FN) } ndf__cu_api;
typedef struct ndf__nvrtc_api { NDF_NVRTC_FUNCS(NDF__DECL_FN) } ndf__nvrtc_api;
#undef NDF__DECL_FN

/* Process-wide tables, loaded once (thread-safe).  NULL when the library is
 * missing; *why then says what was tried. */
const ndf__cu_api *ndf__cu(const char **why);
const ndf__nvrtc_api *ndf__nvrtc(const char **why);
/* File NVRTC was loaded from (loads it if needed); NULL when it cannot be loaded. */
const char *ndf__nvrtc_path(void);

#endif
