// ONNX's vision operators as dscc's sliding-window ops: Conv, MaxPool and AveragePool become `conv` and `pool`.
#include <onnx/onnx_pb.h>

#include "frontend/OnnxBuilder.h"
#include "frontend/OnnxInternal.h"

namespace dscc::frontend {

namespace {

// The attributes conv and pool share: strides, dilations, pads or auto_pad.
// ONNX's NOTSET is dscc's explicit pads (the default); SAME_UPPER, SAME_LOWER
// and VALID become auto_pad, so the pads follow the sizes at run time.
Attrs windowAttrs(const onnx::NodeProto& n, size_t spatial) {
  Attrs a;
  auto list = [&](const char* name, size_t want) {
    auto v = attrInts(n, name);
    if (!v) return;
    if (v->size() != want)
      throw ImportError("attribute '" + std::string(name) + "' has " + std::to_string(v->size()) +
                        " entries, but the input has " + std::to_string(spatial) + " spatial dims (expected " +
                        std::to_string(want) + ")");
    a.push_back({name, intList(*v)});
  };
  list("strides", spatial);
  list("dilations", spatial);
  std::string ap = attrString(n, "auto_pad", "NOTSET");
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER" || ap == "VALID") {
    std::string low = ap == "SAME_UPPER" ? "same_upper" : ap == "SAME_LOWER" ? "same_lower" : "valid";
    a.push_back({"auto_pad", Attribute::makeString(low)});
    // ONNX says pads are not used with auto_pad; a model may still carry zeros.
    if (auto p = attrInts(n, "pads"))
      for (int64_t v : *p)
        if (v != 0) throw ImportError("attribute 'pads' must not be given with auto_pad = " + ap);
  } else if (ap == "NOTSET") {
    list("pads", 2 * spatial);
  } else {
    throw ImportError("auto_pad = '" + ap + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  return a;
}

size_t spatialRank(const Value* x, const char* op) {
  if (x->type.rank() < 3)
    throw ImportError(std::string(op) + " needs an input of rank >= 3 ([N, C, spatial...]), got " + x->type.str());
  return x->type.rank() - 2;
}

void conv(NodeBuilder& b, const onnx::NodeProto& n) {
  Value* x = b.in(0);
  Value* w = b.in(1);
  size_t sp = spatialRank(x, "Conv");
  if (w->type.rank() != x->type.rank())
    throw ImportError("the weight must have the input's rank " + std::to_string(x->type.rank()) + ", got " +
                      w->type.str());
  if (auto ks = attrInts(n, "kernel_shape")) {
    // Redundant with the weight's shape in ONNX; a contradiction is an error, not a guess. A symbolic
    // weight dim (--symbolic-dims) is the weight's actual size, which the size rule reads at run time.
    if (ks->size() != sp) throw ImportError("attribute 'kernel_shape' has " + std::to_string(ks->size()) + " entries, expected " + std::to_string(sp));
    for (size_t i = 0; i < sp; ++i)
      if (w->type.dims[2 + i].isConst() && w->type.dims[2 + i] != DimExpr((*ks)[i]))
        throw ImportError("attribute 'kernel_shape' says " + std::to_string((*ks)[i]) + " for spatial dim " +
                          std::to_string(i) + " but the weight is " + w->type.str());
  }
  Attrs a = windowAttrs(n, sp);
  int64_t group = attrInt(n, "group", 1);
  if (group < 1) throw ImportError("attribute 'group' must be >= 1, got " + std::to_string(group));
  if (group != 1) a.push_back({"group", Attribute::makeInt(group)});
  std::vector<Value*> ops{x, w};
  if (n.input_size() > 2 && !n.input(2).empty()) ops.push_back(b.in(2));
  b.out(b.op(OpKind::Conv, ops, a));
}

void pool(NodeBuilder& b, const onnx::NodeProto& n, bool isMax) {
  const char* name = isMax ? "MaxPool" : "AveragePool";
  if (isMax && n.output_size() > 1 && !n.output(1).empty())
    throw ImportError("MaxPool's second output (Indices, '" + n.output(1) + "') is not supported; only the pooled values are");
  Value* x = b.in(0);
  size_t sp = spatialRank(x, name);
  auto ks = attrInts(n, "kernel_shape");
  if (!ks) throw ImportError("attribute 'kernel_shape' is required");
  if (ks->size() != sp)
    throw ImportError("attribute 'kernel_shape' has " + std::to_string(ks->size()) + " entries, but the input has " +
                      std::to_string(sp) + " spatial dims");
  Attrs a{{"kind", Attribute::makeString(isMax ? "max" : "avg")}, {"kernel_shape", intList(*ks)}};
  Attrs w = windowAttrs(n, sp);
  a.insert(a.end(), w.begin(), w.end());
  if (attrInt(n, "ceil_mode", 0) != 0) a.push_back({"ceil_mode", Attribute::makeBool(true)});
  if (!isMax && attrInt(n, "count_include_pad", 0) != 0) a.push_back({"count_include_pad", Attribute::makeBool(true)});
  // storage_order only orders MaxPool's Indices, which are refused above.
  b.out(b.op(OpKind::Pool, {x}, a));
}

}  // namespace

bool convertVision(Ctx& c, const onnx::NodeProto& n) {
  NodeBuilder b{c, n};
  const std::string& op = n.op_type();
  if (op == "Conv") {
    conv(b, n);
    return true;
  }
  if (op == "MaxPool" || op == "AveragePool") {
    pool(b, n, op == "MaxPool");
    return true;
  }
  return false;
}

}  // namespace dscc::frontend
