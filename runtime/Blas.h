// The BLAS behind dscc_sgemm_*: OpenBLAS pinned to one thread, work split over the context's pool.
#pragma once

#include <cstdint>

namespace dscc::runtime {

/// Sets OpenBLAS to run every call on its calling thread, once per process,
/// through its API (openblas_set_num_threads), so OPENBLAS_NUM_THREADS and
/// friends have no say. Parallelism comes from the context's pool instead:
/// it honours each context's own thread count (OpenBLAS's count is one global
/// number), concurrent callers need no lock around the BLAS, and no second
/// set of busy-waiting threads competes with the pool's.
void initBlas();

/// OpenBLAS's description of its build (version, target, thread model).
const char* blasConfig();

/// How a batched gemm is cut into tasks for the pool: each of the `batch`
/// matrices is split into tilesM x tilesN tiles of C, one BLAS call each.
struct GemmSplit {
  int64_t tilesM = 1;     ///< row strips per matrix
  int64_t tilesN = 1;     ///< column strips per matrix
  bool parallel = false;  ///< false: run everything on the calling thread
};

/// Chooses the split for `numThreads` threads from the sizes alone (so a call
/// is always cut the same way). Small problems stay on the caller; a batch of
/// at least numThreads matrices is split by matrix; otherwise each matrix is
/// tiled into about numThreads / batch tiles, picking the grid that re-reads
/// the least of A and B (each column strip re-packs A, each row strip B).
GemmSplit chooseGemmSplit(int64_t M, int64_t N, int64_t K, int64_t batch, int numThreads);

}  // namespace dscc::runtime
