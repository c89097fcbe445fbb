/*
 * cuda_api.c -- loads libcuda.so.1 and NVRTC with dlopen, once per process,
 * so libndforge loads and runs (CPU backend) where neither exists.
 */
#include "cuda_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static ndf__cu_api g_cu;
static const ndf__cu_api *g_cu_ok;
static char g_cu_why[512];
static pthread_once_t g_cu_once = PTHREAD_ONCE_INIT;

static ndf__nvrtc_api g_nvrtc;
static const ndf__nvrtc_api *g_nvrtc_ok;
static char g_nvrtc_why[1024];
static pthread_once_t g_nvrtc_once = PTHREAD_ONCE_INIT;

static void load_cu(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(g_cu_why, sizeof g_cu_why, "libcuda.so.1 not loadable (%s)", dlerror());
    return;
  }
#define LOAD(ret, name, sym, args)                                                      \
  *(void **)(&g_cu.name) = dlsym(h, sym);                                               \
  if (!g_cu.name) {                                                                     \
    snprintf(g_cu_why, sizeof g_cu_why, "libcuda.so.1 lacks %s (driver too old)", sym); \
    return;                                                                             \
  }
  NDF_CU_FUNCS(LOAD)
#undef LOAD
  g_cu_ok = &g_cu;
}

const ndf__cu_api *ndf__cu(const char **why) {
  pthread_once(&g_cu_once, load_cu);
  if (why) *why = g_cu_why;
  return g_cu_ok;
}

/* NVRTC's soname carries its major version; $NDF_NVRTC_PATH names a file explicitly. */
static void load_nvrtc(void) {
  static const char *names[] = {
      "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
      "/usr/local/cuda/lib64/libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13",
      "/usr/local/cuda/lib64/libnvrtc.so.12", NULL};
  void *h = NULL;
  const char *env = getenv("NDF_NVRTC_PATH");
  if (env && *env) h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
  for (int i = 0; !h && names[i]; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(g_nvrtc_why, sizeof g_nvrtc_why,
             "NVRTC not found (tried $NDF_NVRTC_PATH, libnvrtc.so[.13|.12], /usr/local/cuda/lib64)");
    return;
  }
#define LOAD(ret, name, sym, args)                                           \
  *(void **)(&g_nvrtc.name) = dlsym(h, sym);                                 \
  if (!g_nvrtc.name) {                                                       \
    snprintf(g_nvrtc_why, sizeof g_nvrtc_why, "NVRTC lacks %s (too old)", sym); \
    return;                                                                  \
  }
  NDF_NVRTC_FUNCS(LOAD)
#undef LOAD
  g_nvrtc_ok = &g_nvrtc;
}

const ndf__nvrtc_api *ndf__nvrtc(const char **why) {
  pthread_once(&g_nvrtc_once, load_nvrtc);
  if (why) *why = g_nvrtc_why;
  return g_nvrtc_ok;
}

const char *ndf__nvrtc_path(void) {
  static char path[4096];
  Dl_info info;
  if (!ndf__nvrtc(NULL) || !dladdr(*(void **)&g_nvrtc.nvrtcVersion, &info) || !info.dli_fname) return NULL;
  snprintf(path, sizeof path, "%s", info.dli_fname);
  return path;
}
