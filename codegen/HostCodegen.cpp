// Generation of a whole model: the entry points over the host emitter (HostEmitter.h), and the dispatch of a kernel version to its lowering.
#include "codegen/HostCodegen.h"

#include "codegen/ElementGenerator.h"
#include "codegen/HostEmitter.h"
#include "codegen/KernelLowering.h"
#include "codegen/LibraryPlan.h"
#include "codegen/ReductionLowering.h"

namespace dscc::codegen {

std::string runSymbol(const Function& f) { return cIdentifier(f.name) + "_run"; }

LoweredKernel lowerKernelVersion(const KernelPlan& k, size_t v, CodeModule& m, const std::string& name) {
  if (k.kind == "loop") return lowerLoopKernel(*k.fusion, m, name, k.versions[v]);
  if (k.kind == "stitch") return lowerStitchKernel(*k.fusion, m, name, k.versions[v]);
  if (k.kind == "input") return lowerInputKernel(*k.fusion, m, name, k.versions[v]);
  if (k.kind == "generic") return lowerGenericKernel(*k.fusion, m, name, k.versions[v]);
  return lowerLoopKernel(*k.gemm->epilogue, m, name, k.versions[v]);
}

std::string emitModel(const ModelPlan& plan, const std::string& source, CodeModule& m, const GpuArtifact* gpu,
                      const std::string& sourceDir) {
  return HostEmitter(plan, m, gpu, sourceDir).emit(source);
}

}  // namespace dscc::codegen
