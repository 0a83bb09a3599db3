// `dscc compile`'s objects and shared libraries: per-kernel objects through the compile cache, compiled in parallel, linked with the host code and the weights.
#pragma once

#include <string>

#include "codegen/HostCodegen.h"
#include "codegen/ObjectEmitter.h"
#include "tools/CacheOptions.h"
#include "tools/Session.h"

namespace dscc::tools {

/// What to build and how (filled by cmdCompile).
struct ArtifactRequest {
  std::string file;     ///< the program, for -g and the source folder
  std::string objPath;  ///< -c / --emit=obj output, or ""
  std::string soPath;   ///< shared library output, or ""
  std::string runtimeDir;  ///< --runtime-dir as given
  bool debugInfo = false;
  int jobs = 0;  ///< kernel compile threads (0: one per hardware thread)
  codegen::ObjectOptions object;
  const codegen::GpuArtifact* gpu = nullptr;
  CacheSettings cache;
};

/// Builds the requested object and/or shared library from `fe`'s plan,
/// reusing and filling the cache. Errors are printed (`dscc: error: ...`);
/// returns the exit status.
int buildArtifacts(const Session& fe, const ArtifactRequest& r);

/// Writes `bytes` to `path` ("-": stdout); false with `err` set.
bool writeFile(const std::string& path, const std::string& bytes, std::string* err);

/// Runs a program (no shell) and waits; returns its exit status or -1.
int runProgram(const std::vector<std::string>& argv);

}  // namespace dscc::tools
