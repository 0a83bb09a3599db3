// The kinds of fused kernel and their text form (declared in KernelKind.h).
#include "ir/KernelKind.h"

#include "ir/IR.h"

namespace dscc {

const char* kernelKindName(KernelKind k) {
  switch (k) {
    case KernelKind::Loop: return "loop";
    case KernelKind::Input: return "input";
    case KernelKind::Stitch: return "stitch";
    case KernelKind::Generic: return "generic";
    case KernelKind::Library: return "library";
  }
  return "?";
}

std::optional<KernelKind> parseKernelKind(std::string_view s) {
  for (KernelKind k : {KernelKind::Loop, KernelKind::Input, KernelKind::Stitch, KernelKind::Generic, KernelKind::Library})
    if (s == kernelKindName(k)) return k;
  return std::nullopt;
}

std::optional<KernelKind> kernelKindOf(const Operation& fusion) {
  const Attribute* a = fusion.attr("kind");
  if (!a || a->kind != Attribute::Kind::String) return std::nullopt;
  return parseKernelKind(a->s);
}

void setKernelKind(Operation& fusion, KernelKind k) { fusion.setAttr("kind", Attribute::makeString(kernelKindName(k))); }

}  // namespace dscc
