/* Runtime calls that generated code (compiled models) makes and users need not: kernel launches. */
#ifndef DSCC_GENERATED_H
#define DSCC_GENERATED_H

#include "dscc_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A compiled kernel: computes its parallel units [begin, end) (codegen/Kernel.h).
typedef void (*dscc_kernel_fn)(void** inputs, void** outputs, const int64_t* sizes, int64_t begin, int64_t end);

/// Runs `fn` over the units [0, units) split over the context's threads, each
/// chunk at least `grain` units (except the last); small launches run on the
/// calling thread alone. `inputs`, `outputs` and `sizes` are passed through
/// unchanged. Returns DSCC_OK, or DSCC_INVALID_ARGUMENT for a null function or
/// a negative count.
dscc_status dscc_launch_kernel(dscc_context* ctx, dscc_kernel_fn fn, void** inputs, void** outputs,
                               const int64_t* sizes, int64_t units, int64_t grain);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // DSCC_GENERATED_H
