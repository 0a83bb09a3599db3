// libFuzzer target: the shape-distribution reader and its expansion against a function with facts.
#include <cstdint>
#include <sstream>
#include <string>

#include "ir/Parser.h"
#include "tuner/ShapeDistribution.h"

using namespace dscc;

namespace {
// The function the points are checked against (symbols N and D, with facts).
const Function& target() {
  static SourceMgr sm;
  static std::ostringstream out;
  static DiagEngine diags(sm, out);
  static std::unique_ptr<Module> m = parseModule(
      sm,
      sm.addBuffer("ln.dsc",
                   "func @layer_norm(%x: f32[N, D], %g: f32[D], %b: f32[D]) -> f32[N, D]\n"
                   "    where N in [1, 65536], D in [1, 16384] {\n"
                   "  %y = layer_norm %x, %g, %b {axis = -1, epsilon = 1e-5}\n  return %y\n}\n"),
      diags);
  return *m->entry();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tuner::DistributionSpec spec;
  std::string err;
  if (!tuner::parseDistribution("fuzz.yaml", std::string(reinterpret_cast<const char*>(data), size), spec, err))
    return 0;
  // Draws are bounded by the reader (kMaxDraws); here fewer keep each run fast.
  if (spec.draws > 10000) return 0;
  std::vector<tuner::WeightedPoint> points;
  tuner::expandDistribution(spec, target(), points, err);
  return 0;
}
