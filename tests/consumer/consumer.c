/* A program outside the ndforge tree that uses the installed library through its
 * one public header: scipy.ndimage.grey_dilation(a, size=3) of a 1-D array on the
 * CPU backend, checked by hand.  tests/test_install.sh builds it against an
 * installed ndforge, once with find_package(ndforge CONFIG) and once with
 * pkg-config, and runs it. */
#include <ndforge.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  ndf_ctx_options opt;
  ndf_ctx_options_init(&opt);
  opt.backend = NDF_BACKEND_CPU;
  opt.cache_disable = 1;
  ndf_ctx *ctx;
  if (ndf_ctx_create(&ctx, &opt) != NDF_OK) {
    fprintf(stderr, "consumer: %s\n", ndf_last_error());
    return 1;
  }
  float in[6] = {1, 5, 2, 0, 0, 3}, out[6];
  const float want[6] = {5, 5, 5, 2, 3, 3}; /* mode reflect: the ends see themselves */
  int64_t shape[1] = {6};
  ndf_array a, b;
  ndf_array_init(&a, in, NDF_DEVICE_CPU, NDF_FLOAT32, 1, shape);
  ndf_array_init(&b, out, NDF_DEVICE_CPU, NDF_FLOAT32, 1, shape);
  ndf_grey_options g;
  ndf_grey_options_init(&g);
  g.nsize = 1;
  g.size[0] = 3;
  ndf_status s = ndf_grey_dilation(ctx, &a, &b, &g);
  if (s != NDF_OK) {
    fprintf(stderr, "consumer: %s\n", ndf_errmsg(ctx));
    ndf_ctx_destroy(ctx);
    return 1;
  }
  ndf_ctx_destroy(ctx);
  if (memcmp(out, want, sizeof want) != 0) {
    fprintf(stderr, "consumer: wrong dilation\n");
    return 1;
  }
  printf("ndforge %s: grey_dilation ok\n", ndf_version());
  return 0;
}
