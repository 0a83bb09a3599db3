// Generation of a whole model: the entry points over the host emitter (HostEmitter.h), and the dispatch of a kernel version to its lowering.
#include "codegen/HostCodegen.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "codegen/GenericKernel.h"
#include "codegen/HostEmitter.h"
#include "codegen/KernelLowering.h"
#include "codegen/LibraryPlan.h"
#include "codegen/ReductionLowering.h"
#include "ir/Tensor.h"

namespace dscc::codegen {

std::string runSymbol(const Function& f) { return cIdentifier(f.name) + "_run"; }

LoweredKernel lowerKernelVersion(const KernelPlan& k, size_t v, CodeModule& m, const std::string& name,
                                 int splitPhase) {
  if (!k.form) {
    LoweredKernel res;
    res.error = "codegen: kernel " + k.symbol + " has no planned form (it has no kernel of ours)";
    return res;
  }
  switch (k.kind) {
    case KernelKind::Loop: return lowerLoopKernel(*k.form, m, name, k.versions[v]);
    case KernelKind::Stitch: return lowerStitchKernel(*k.form, m, name, k.versions[v]);
    case KernelKind::Input: return lowerInputKernel(*k.form, m, name, k.versions[v], splitPhase);
    case KernelKind::Generic: return lowerGenericKernel(*k.form, m, name, k.versions[v]);
    case KernelKind::Library: break;
  }
  return lowerLoopKernel(*k.form, m, name, k.versions[v]);  // the GEMM's epilogue
}

std::string emitModel(const ModelPlan& plan, const std::string& source, CodeModule& m, const GpuArtifact* gpu,
                      const std::string& sourceDir, ExternalData* external, Location* errorLoc) {
  HostEmitter e(plan, m, gpu, sourceDir);
  e.setExternalData(external);
  std::string error = e.emit(source);
  if (errorLoc) *errorLoc = error.empty() ? Location() : e.errorLoc();
  return error;
}

std::string ExternalData::write(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return "cannot write '" + path + "': " + std::strerror(errno);
  uint64_t at = 0;
  static const char zeros[64] = {};
  for (const auto& [offset, t] : parts) {
    out.write(zeros, static_cast<std::streamsize>(offset - at));
    out.write(reinterpret_cast<const char*>(t->bytes.data()), static_cast<std::streamsize>(t->bytes.size()));
    at = offset + t->bytes.size();
  }
  out.write(zeros, static_cast<std::streamsize>(size - at));
  out.close();
  if (!out) return "cannot write '" + path + "': " + std::strerror(errno);
  return "";
}

std::string ExternalData::assembly(const std::string& path) const {
  std::string quoted;
  for (char ch : path) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    quoted += ch;
  }
  return "\t.section .rodata." + symbol + ",\"a\",@progbits\n\t.balign 64\n\t.globl " + symbol + "\n\t.hidden " +
         symbol + "\n\t.type " + symbol + ",@object\n\t.size " + symbol + ", " + std::to_string(size) + "\n" +
         symbol + ":\n\t.incbin \"" + quoted + "\"\n\t.section .note.GNU-stack,\"\",@progbits\n";
}

}  // namespace dscc::codegen
