// The install test's C++ program: the scale model through its header, built with find_package(dscc).
#include <cstdio>
#include <vector>

#include "scale.h"

int main() {
  dscc_context* ctx = dscc_context_create(1);
  std::vector<float> x = {1, 1, 1, 2, 2, 2};
  int64_t dims[2] = {2, 3}, odims[2] = {0, 0};
  dscc_tensor in = {x.data(), dims, 2, DSCC_F32};
  dscc_tensor out = {nullptr, odims, 2, DSCC_F32};
  if (scale_run(ctx, &in, 1, &out, 1) != DSCC_OK) {
    std::fprintf(stderr, "scale_run: %s\n", dscc_status_message(ctx));
    return 1;
  }
  const float* y = static_cast<const float*>(out.data);
  std::printf("c++: %g %g %g %g %g %g\n", y[0], y[1], y[2], y[3], y[4], y[5]);
  dscc_tensor_free(&out);
  dscc_context_release(ctx);
  return 0;
}
