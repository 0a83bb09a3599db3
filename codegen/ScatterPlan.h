// Plans a library kernel holding a `scatter` or a `cumsum`: on the CPU one runtime call (dscc_scatter, dscc_cumsum
// in runtime/Scatter.cpp), on the GPU kernels of ours (codegen/gpu/GpuScatter.h) over the same view.
#pragma once

#include <string>

#include "ir/IR.h"
#include "ir/Scatter.h"

namespace dscc::codegen {

/// One scatter: data viewed as [rows, inner], updates as [count, inner] (a dscc_scatter call, or GPU launches).
struct ScatterPlan {
  const Operation* op = nullptr;  ///< the scatter inside the fusion's body
  size_t data = 0, indices = 0, updates = 0;  ///< fusion operand indices
  DimExpr rows, count, inner;  ///< data's dim 0, the number of indices, data's elements per row
  ScatterReduction reduction = ScatterReduction::None;
  DType dtype = DType::F32, indexDType = DType::I64;
  bool gpu = false;  ///< planned for a GPU target: launches of codegen/gpu/GpuScatter.h, no runtime call
};

/// One cumsum: x viewed as [outer, len, inner] around the axis (a dscc_cumsum call, or a GPU launch).
struct ScanPlan {
  const Operation* op = nullptr;  ///< the cumsum inside the fusion's body
  size_t x = 0;                   ///< fusion operand index
  DimExpr outer, len, inner;
  ScanAttrs attrs;
  DType dtype = DType::F32;
  bool gpu = false;  ///< planned for a GPU target (codegen/gpu/GpuScatter.h)
};

/// True when `fusion`'s body holds a scatter (its planner kind is then library).
bool isScatterKernel(const Operation& fusion);
/// True when `fusion`'s body holds a cumsum (its planner kind is then library).
bool isScanKernel(const Operation& fusion);

/// Plans `fusion` (a library kernel holding a scatter) for the CPU or (`gpu`) a GPU target; "" or why not.
std::string planScatterKernel(const Operation& fusion, bool gpu, ScatterPlan& out);
/// Plans `fusion` (a library kernel holding a cumsum); "" or why not.
std::string planScanKernel(const Operation& fusion, bool gpu, ScanPlan& out);

}  // namespace dscc::codegen
