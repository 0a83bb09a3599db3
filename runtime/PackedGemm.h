// Small-M sgemm against a model's constant weights: B packed once per context into column panels, streamed by an AVX-512 kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace dscc::runtime {

/// A K x N matrix in panels of kPanelWidth columns: panel p holds columns
/// [p*kPanelWidth, (p+1)*kPanelWidth) as K contiguous rows of kPanelWidth
/// floats (zeros past N), 64-byte aligned, so a kernel reads each panel as
/// one forward stream that the hardware prefetchers follow.
struct PackedB {
  static constexpr int64_t kPanelWidth = 32;
  int64_t K = 0, N = 0, panels = 0;
  float* data = nullptr;  ///< panels * K * kPanelWidth floats
  PackedB() = default;
  PackedB(const PackedB&) = delete;
  PackedB& operator=(const PackedB&) = delete;
  ~PackedB();
};

/// A context's packed copies of constant B matrices, made on first use.
/// Keyed by the matrix's address, layout and the content key the compiler
/// derived from its bytes (so another model loaded at the same address
/// never meets a stale copy). Thread-safe; a packing caller holds the lock.
class PackedCache {
 public:
  /// Packed bytes one context keeps at most; past it, calls take the unpacked path.
  static constexpr size_t kMaxBytes = size_t{4} << 30;

  /// The packed copy of B (row-major K x N with pitch ldb, or N x K when
  /// transB), packing it now if needed; null if the limit is reached or
  /// memory runs out.
  const PackedB* get(const float* B, int64_t ldb, bool transB, int64_t K, int64_t N, uint64_t key);

  /// Bytes held by the packed copies.
  size_t bytes() const;

 private:
  using Key = std::tuple<uintptr_t, uint64_t, int64_t, int64_t, int64_t, bool>;
  mutable std::mutex mu_;
  std::map<Key, std::unique_ptr<PackedB>> map_;
  size_t bytes_ = 0;
};

/// Packs B (row-major K x N with pitch ldb, or N x K when transB) into `out`, owned by it: for a B that many
/// calls of one runtime call read (a recurrent layer's weight, every time step). False when out of memory.
bool packInto(const float* B, int64_t ldb, bool transB, int64_t K, int64_t N, PackedB& out);

/// True when this CPU runs the packed kernel (AVX-512F) and the call's shape
/// is one it is for: at most kMaxPackedRows rows of A, A not transposed, K
/// and N not 0. Above that many rows the BLAS's own blocking is faster
/// (the product is compute-bound and re-packing B per call is amortised).
bool packedGemmApplies(int64_t M, int64_t N, int64_t K, bool transA);

/// Whether this CPU runs AVX-512F code: the packed kernel's and the recurrent layers' vector gates' condition.
bool haveAvx512();

/// Rows of A up to which packedGemmApplies.
constexpr int64_t kMaxPackedRows = 48;

/// C[M, N] (pitch ldc) = A[M, K] (pitch lda) x B, with B packed: columns
/// [p0 * kPanelWidth, p1 * kPanelWidth) of C only (clamped to N), so callers
/// can split the panels over threads. Requires packedGemmApplies.
void packedGemm(int64_t M, const float* A, int64_t lda, const PackedB& b, float* C, int64_t ldc, int64_t p0,
                int64_t p1);

}  // namespace dscc::runtime
