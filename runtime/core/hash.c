/* hash.c -- FNV-1a, 64 bit: cache file names, payload checksums, table keys. */
#include "internal.h"

uint64_t ndf__hash_fnv1a64(const void *data, size_t n, uint64_t seed) {
  const unsigned char *p = data;
  uint64_t h = seed;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}
