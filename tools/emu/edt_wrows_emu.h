// edt_wrows_emu.h -- the arguments of one emulated pass of
// templates/distance_edt.cu (tools/emu/edt_wrows_emu.sh): the fields of
// ndf_edt_params as plain types, and the launch shape.
#pragma once
#include <cstdint>
struct emu_args {
  const void *in;
  const int *sfeat;
  const void *sw;
  int *dfeat;
  void *dw;
  void *stack;
  void *dist;
  int *idx;
  int64_t nlines, n, inner;
  double s;
  int nd, nb, axis;
  int64_t npix;
  const int64_t *shape, *istr, *dstr, *xstr;
  int64_t xk;
  const double *samp;
  int64_t wseg, wstride;
  int wexact;
  int64_t wbytes;
  int wtree, wfast;
  unsigned grid, bx, by;
};
