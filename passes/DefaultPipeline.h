// The default optimisation pipeline, as plain code.
#pragma once

#include <vector>

#include "passes/Pipeline.h"

namespace dscc {

/// The passes `dscc compile` runs, in order (see DefaultPipeline.cpp).
std::vector<const PassInfo*> defaultPipeline();

}  // namespace dscc
