// The channels-last layout pass (flag `channels-last`): convs and pools of the CPU target on [N, spatial..., C] tensors.
#pragma once

#include "ir/IR.h"
#include "passes/Pipeline.h"

namespace dscc {

/// Gives every f32 `conv` and `pool` of the CPU target `channels_last = true`
/// (its operand and result [N, spatial..., C]), with transposes around it,
/// then sinks the transposes back to channels-first order through the
/// elementwise ops, reductions and concats that read them, cancels the pairs
/// that meet, and returns a conv or pool that kept a real transpose on both
/// sides to channels first (passes/ChannelsLast.cpp says why). The result
/// computes the same values; canonicalize, fold-constants and dce clean up
/// after it. Nothing changes for the GPU targets.
bool channelsLast(Module& m, PassContext& ctx);

}  // namespace dscc
