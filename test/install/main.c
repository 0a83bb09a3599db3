/* The install test's C program: calls the compiled scale model through its generated header (pkg-config build). */
#include <stdio.h>

#include "scale.h"

int main(void) {
  dscc_context* ctx = dscc_context_create(2);
  if (!ctx) return 1;
  float x[6] = {1, 1, 1, 2, 2, 2};
  int64_t dims[2] = {2, 3}, odims[2] = {0, 0};
  dscc_tensor in = {x, dims, 2, DSCC_F32};
  dscc_tensor out = {NULL, odims, 2, DSCC_F32};
  dscc_status st = scale_run(ctx, &in, 1, &out, 1);
  if (st != DSCC_OK) {
    fprintf(stderr, "scale_run: %s: %s\n", dscc_status_name(st), dscc_status_message(ctx));
    return 1;
  }
  const float* y = (const float*)out.data;
  printf("c: %g %g %g %g %g %g\n", y[0], y[1], y[2], y[3], y[4], y[5]);
  dscc_tensor_free(&out);
  /* A size outside the model's facts: the runtime's message. */
  dims[0] = 65;
  st = scale_run(ctx, &in, 1, &out, 1);
  printf("c: N=65: %s\n", dscc_status_name(st));
  dscc_context_release(ctx);
  return st == DSCC_FACT_VIOLATED ? 0 : 1;
}
