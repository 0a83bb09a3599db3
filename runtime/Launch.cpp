// Kernel launches for generated host code: one parallel_for per kernel, with the kernel's arguments as its closure.
#include "dscc_generated.h"

namespace {

struct Launch {
  dscc_kernel_fn fn;
  void** inputs;
  void** outputs;
  const int64_t* sizes;
};

void body(void* closure, int64_t begin, int64_t end) {
  auto* l = static_cast<Launch*>(closure);
  l->fn(l->inputs, l->outputs, l->sizes, begin, end);
}

}  // namespace

extern "C" dscc_status dscc_launch_kernel(dscc_context* ctx, dscc_kernel_fn fn, void** inputs, void** outputs,
                                          const int64_t* sizes, int64_t units, int64_t grain) {
  if (!fn || units < 0)
    return dscc_set_error(ctx, DSCC_INVALID_ARGUMENT, "dscc_launch_kernel: %s",
                          !fn ? "null kernel" : "negative unit count");
  if (units == 0) return DSCC_OK;
  if (grain < 1) grain = 1;
  // A launch that one chunk covers skips the pool's bookkeeping.
  if (units <= grain || !ctx || dscc_context_num_threads(ctx) <= 1) {
    fn(inputs, outputs, sizes, 0, units);
    return DSCC_OK;
  }
  Launch l{fn, inputs, outputs, sizes};
  return dscc_parallel_for(ctx, units, grain, body, &l);
}
