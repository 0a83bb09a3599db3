// GPU kernels of `rnn` (ONNX LSTM, GRU, RNN; the library kernels of codegen/RecurrentPlan.h): bodies in the KernelFn
// convention that codegen/gpu/GpuKernels.cpp wraps in grid-stride PTX entries, launched by a host loop over time
// steps (HostEmitter::launchGpuData), and run on the CPU by test/unit/GpuRecurrentTest.cpp.
//
// The recurrence is sequential in time and parallel across directions, batch rows and hidden units, so a step is
// one launch of a thread per (direction, batch row, hidden unit) and the host walks the steps. Launches:
//   init   once, a thread per (d, n, k): the hidden state (and an lstm's cell state) from the initial states or 0;
//   proj   once, a thread per (t, d, n, gate row): x_t W^T + Wb for every step, so that the per-step launches
//          only do the recurrence h R^T (the input half is as parallel as the whole sequence);
//   gates  each step, gru without linear_before_reset only: z and r*h_{t-1} per unit, since the h gate's
//          (r*h) R_h^T needs r of every unit of the row before any unit can go on;
//   step   each step: h_{t-1} R^T + Rb for the unit's gate rows, the cell's equations, the new state, y at t;
//   final  after the steps, output y_h or y_c only: the state after the last step, rounded to the result.
// Step s of direction d walks t = s (forward) or S-1-s (reverse; direction 1 of bidirectional). The hidden state is
// double-buffered by step parity (step s reads buffer s%2, writes the other: other threads of the launch still read
// the old state); an lstm's cell state and a gru's z are read and written by their own unit's thread only, so one
// buffer each does.
//
// Everything is computed in f64 from the widened inputs and the states stay f64 between steps, in the
// interpreter's order (ir/InterpRecurrent.cpp): sums from the bias (or 0) up the index, sigmoid as 1/(1+exp(-v)),
// tanh and exp from libdevice (libm on the CPU). Each output is rounded once (f16/bf16 through f32 rounded to odd).
// On the CPU emulation the result has the interpreter's bits; on a GPU libdevice's exp/tanh may differ from libm in
// the last place of an f64, far below any stored dtype's precision.
#pragma once

#include <string>

#include "codegen/Jit.h"
#include "codegen/RecurrentPlan.h"
#include "codegen/gpu/GpuScatter.h"

namespace dscc::codegen {

/// f64 slots of rnn `p`'s workspace: the hidden state twice (D*N*H each), the cell state (lstm) or z and r*h (gru
/// without linear_before_reset), then the input projection of every step (S*D*N*G*H).
DimExpr gpuRnnWorkspace(const RnnPlan& p);

/// Adds the bodies of rnn `p` to `m` as functions `name` + ".init", ".proj", ".gates", ".step", ".final" (the
/// ones its cell and output need); `out` gets its launches in order (DataLaunchWhen says where each runs), takes
/// the step index after its symbols, and has a workspace (outputs: result, workspace). Returns "" or an error.
std::string lowerGpuRnn(const RnnPlan& p, CodeModule& m, const std::string& name, DataKernel& out);

}  // namespace dscc::codegen
