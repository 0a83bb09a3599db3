// The runtime-internal form of dscc_rnn_f32: one call's arguments, and its two ways to run (oneDNN's RNN primitives, or a loop over time steps of our own).
#pragma once

#include <cstdint>

#include "runtime/dscc_runtime.h"

namespace dscc::runtime {

/// One dscc_rnn_f32 call (docs/abi.md has the layouts), with the content keys of its constant weights.
struct RnnCall {
  int32_t cell = 0;       ///< 0 lstm, 1 gru, 2 rnn
  int32_t direction = 0;  ///< 0 forward, 1 reverse, 2 bidirectional
  bool lbr = false;       ///< gru's linear_before_reset
  int32_t output = 0;     ///< 0 y, 1 y_h, 2 y_c
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  const float *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr, *h0 = nullptr, *c0 = nullptr;
  float* y = nullptr;
  /// 0, or a key the compiler derived from the bytes of a constant w (r): the context then keeps it in the
  /// primitive's layout (Context::convWeights) instead of reordering it on every call.
  uint64_t wKey = 0, rKey = 0;

  int64_t dirs() const { return direction == 2 ? 2 : 1; }
  int64_t gates() const { return cell == 0 ? 4 : cell == 1 ? 3 : 1; }
};

/// Which implementation runs a call: the fastest that takes it, or one of them (for tests).
enum class RnnPath { Auto, Loop, Dnnl };

/// Checks `c` (messages name `fn`) and runs it on `path`; with RnnPath::Dnnl, DSCC_UNAVAILABLE (and nothing
/// written) where oneDNN cannot take the call or the runtime has no oneDNN.
dscc_status rnnF32(dscc_context* ctx, const RnnCall& c, RnnPath path, const char* fn = "dscc_rnn_f32");

/// The loop over time steps (runtime/Recurrent.cpp): takes every checked call, with or without oneDNN.
dscc_status rnnLoop(dscc_context* ctx, const RnnCall& c);

/// oneDNN's lstm, gru, lbr_gru or vanilla rnn primitive for each direction and batch slice, over the context's
/// threads (runtime/DnnlRecurrent.cpp). DSCC_UNAVAILABLE, nothing written, for a call it does not take (no
/// steps, batch or input features; a runtime without oneDNN).
dscc_status rnnDnnl(dscc_context* ctx, const RnnCall& c);

/// Whether RnnPath::Auto runs `c` through rnnDnnl (else rnnLoop) on a context of `threads` threads.
bool rnnPrefersDnnl(const RnnCall& c, int threads);

}  // namespace dscc::runtime
