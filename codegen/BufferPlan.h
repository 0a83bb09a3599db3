// Buffer assignment by liveness (internal to codegen/): where each value of a model's function lives during a call.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "codegen/ModelPlan.h"

namespace dscc::codegen {

/// Where a value's elements live, as decided before any code is emitted.
/// Values the host computes itself (constants, dims, scalar arithmetic) get
/// no place here: the host emitter places them as it emits them.
struct BufferPlace {
  enum Kind { Input, Alias, Output, Scratch } kind = Scratch;
  size_t index = 0;           ///< Input: input index; Output: output index; Scratch: slot
  const Value* of = nullptr;  ///< Alias: the value it reshapes (a reshape moves no data)
};

/// The buffers of one call of a model's function: the place of every value,
/// and the scratch slots of one arena that intermediate values and the
/// kernels' temporaries share.
struct BufferPlan {
  std::map<const Value*, BufferPlace> places;
  /// GPU: values made on the host, and the slot of their device copy.
  std::map<const Value*, size_t> mirror;
  /// The values each slot holds at some time, and the temporaries (library
  /// operand copies, GEMM results before an epilogue, split workspaces).
  std::map<size_t, std::vector<const Value*>> slotValues;
  std::map<size_t, std::vector<Type>> slotTemps;
  /// A temporary's slot, by its op and name ("a", "b", "c", "ws").
  std::map<std::pair<const Operation*, std::string>, size_t> tempSlot;

  /// The value whose buffer `v` reads: `v` with its reshapes looked through.
  const Value* root(const Value* v) const;
  /// The place of `v`'s root, or null when the host places it.
  const BufferPlace* placeOf(const Value* v) const;
  /// One more than the highest slot used.
  size_t slotCount() const;
};

/// The kernel of `plan` that fusion `op` runs, or null.
const KernelPlan* kernelOf(const ModelPlan& plan, const Operation* op);

/// Assigns the buffers of `plan`'s function. Inputs are read where the caller
/// put them, a reshape aliases its operand, a returned kernel result is
/// written straight into its output; every other kernel result gets a scratch
/// slot, shared by liveness: a slot is free again once the last op reading
/// any value stored in it has run, and the first free one is reused. Library
/// temporaries and GPU split workspaces take a slot for their op only. With
/// `gpu`, every value the host makes gets a device slot too (`mirror`), for
/// the kernels to read.
BufferPlan planBuffers(const ModelPlan& plan, bool gpu);

}  // namespace dscc::codegen
