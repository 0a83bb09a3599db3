// `dscc view` (internal to tools/): what the page shows, the Graphviz layouts of it, and the page itself.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tools/Explain.h"
#include "tools/Session.h"

namespace dscc::tools {

/// A kernel's measured time, from a `dscc run --profile-out` file.
struct KernelTime {
  int64_t ns = 0;
  int64_t calls = 0;  ///< calls of its most called function (one per model call)
};

/// Everything the page shows, in program order.
struct ViewModel {
  std::string model;                     ///< the file given
  const Session* fe = nullptr;          ///< the program, planned
  std::vector<KernelExplain> kernels;    ///< explain's view of each kernel (tools/Explain.h)
  const DimBindings* sizes = nullptr;    ///< --dim, or null
  std::string profileFile;               ///< --profile, or ""
  std::map<std::string, KernelTime> times;  ///< by kernel symbol; empty without --profile
  int64_t profileTotalNs = 0;
};

/// The program laid out by Graphviz's dot as SVG: `collapsed` draws a node
/// per kernel, else each kernel is a cluster of its ops. "" with `err` set
/// when Graphviz fails.
std::string layoutSvg(const ViewModel& v, bool collapsed, std::string& err);

/// The whole self-contained HTML page: the SVGs (`detailed` may be "" for a
/// model too large to draw op by op), the data as JSON, the script and styles.
std::string viewPage(const ViewModel& v, const std::string& detailed, const std::string& collapsed);

/// The page's data as JSON text (embedded in the page; one kernel per line).
std::string viewJson(const ViewModel& v);

/// A kernel's share of the profiled time, 0 to 1 (0 without a profile).
double timeShare(const ViewModel& v, const std::string& symbol);

}  // namespace dscc::tools
