// The ONNX import driver: reads and checks the ModelProto, maps graph inputs, initializers and outputs, writes the text.
#include "frontend/OnnxImporter.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>

#include "frontend/OnnxInternal.h"
#include "ir/Interpreter.h"
#include "ir/Npy.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Sizes.h"
#include "ir/Verifier.h"

namespace dscc::frontend {

namespace {

const SourceMgr& emptySources() {
  static SourceMgr sm;
  return sm;
}

bool isKeyword(const std::string& s) {
  static const std::set<std::string> kw = {"f32", "f16", "bf16", "f64", "i64", "i32", "i8", "i1", "in",
                                           "where", "func", "return", "true", "false", "inf", "nan",
                                           "dense", "splat", "file", "min", "max", "floordiv", "ceildiv",
                                           "bcast", "yield"};
  return kw.count(s) > 0;
}

// The ONNX data type's name, for messages.
std::string onnxTypeName(int t) {
  if (onnx::TensorProto_DataType_IsValid(t)) return onnx::TensorProto_DataType_Name(t);
  return "type " + std::to_string(t);
}

}  // namespace

std::string sanitize(const std::string& s) {
  std::string o;
  for (char ch : s) {
    unsigned char u = static_cast<unsigned char>(ch);
    o += (std::isalnum(u) || ch == '_' || ch == '.' || ch == '$') ? ch : '_';
  }
  if (o.empty() || !(std::isalpha(static_cast<unsigned char>(o[0])) || o[0] == '_')) o = "v" + o;
  if (isKeyword(o)) o = "v_" + o;
  return o;
}

DType dtypeOf(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::F32;
    case onnx::TensorProto::DOUBLE: return DType::F64;
    case onnx::TensorProto::FLOAT16: return DType::F16;
    case onnx::TensorProto::BFLOAT16: return DType::BF16;
    case onnx::TensorProto::INT64: return DType::I64;
    case onnx::TensorProto::INT32: return DType::I32;
    case onnx::TensorProto::INT8: return DType::I8;
    case onnx::TensorProto::BOOL: return DType::I1;
    default: throw ImportError("element type " + onnxTypeName(t) + " is not supported (f32 f64 f16 bf16 i64 i32 i8 bool are)");
  }
}

std::shared_ptr<Tensor> tensorOf(const onnx::TensorProto& t, ExternalData* ext) {
  bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
  if (external && !ext)
    throw ImportError("tensor '" + t.name() + "' keeps its data in an external file, which is read only for a model's initializers");
  if (t.has_segment()) throw ImportError("tensor '" + t.name() + "' is segmented, which is not supported");
  DType dt = dtypeOf(t.data_type());
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw ImportError("tensor '" + t.name() + "' has a negative dim");
  std::optional<int64_t> count = checkedNumel(shape);
  if (!count) throw ImportError("tensor '" + t.name() + "' has more elements than fit in 64 bits");
  int64_t n = *count;
  auto bad = [&](size_t have) {
    throw ImportError("tensor '" + t.name() + "' has " + std::to_string(have) + " values for " + std::to_string(n) +
                      " elements");
  };
  // The values the file holds are counted before anything is allocated, so
  // dims that promise far more data than the file has are an error, not an
  // allocation of their size (a 93-byte file claiming 2^33 floats took 32 GB).
  int64_t given = 0;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: given = t.float_data_size(); break;
    case onnx::TensorProto::DOUBLE: given = t.double_data_size(); break;
    case onnx::TensorProto::INT64: given = t.int64_data_size(); break;
    default: given = t.int32_data_size();
  }
  // External data is read in place from its mapping, as raw_data would be.
  std::string_view raw;
  bool hasRaw = t.has_raw_data() || external;
  if (external) {
    if (n > int64_t(memoryLimit() / int64_t(std::max<size_t>(dtypeSize(dt), 1))))
      throw ImportError("tensor '" + t.name() + "' has " + std::to_string(n) + " elements, over the memory limit");
    raw = ext->bytes(t, size_t(n) * dtypeSize(dt));
  } else if (t.has_raw_data()) {
    raw = t.raw_data();
  }
  if (hasRaw) given = int64_t(raw.size() / std::max<size_t>(dtypeSize(dt), 1));
  if (given != n || (hasRaw && raw.size() != size_t(n) * dtypeSize(dt))) bad(size_t(given));
  std::shared_ptr<Tensor> r;
  try {
    r = std::make_shared<Tensor>(Tensor::zeros(dt, shape));
  } catch (const TensorSizeError& e) {
    throw ImportError("tensor '" + t.name() + "': " + e.what());
  }
  size_t bytes = r->bytes.size();
  if (hasRaw) {
    if (bytes) std::memcpy(r->bytes.data(), raw.data(), bytes);
    if (dt == DType::I1)
      for (int64_t k = 0; k < n; ++k) r->bytes[k] = r->bytes[k] != 0;
    return r;
  }
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (t.float_data_size() != n) bad(t.float_data_size());
      for (int64_t k = 0; k < n; ++k) r->setF(k, t.float_data(k));
      break;
    case onnx::TensorProto::DOUBLE:
      if (t.double_data_size() != n) bad(t.double_data_size());
      for (int64_t k = 0; k < n; ++k) r->setF(k, t.double_data(k));
      break;
    case onnx::TensorProto::INT64:
      if (t.int64_data_size() != n) bad(t.int64_data_size());
      for (int64_t k = 0; k < n; ++k) r->setI(k, t.int64_data(k));
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      // Stored as their 16 bits in int32_data.
      if (t.int32_data_size() != n) bad(t.int32_data_size());
      for (int64_t k = 0; k < n; ++k) r->data<uint16_t>()[k] = static_cast<uint16_t>(t.int32_data(k));
      break;
    default:  // int32, int8, bool
      if (t.int32_data_size() != n) bad(t.int32_data_size());
      for (int64_t k = 0; k < n; ++k) r->setI(k, t.int32_data(k));
  }
  return r;
}

OValue constantValue(std::shared_ptr<const Tensor> t) {
  OValue o;
  o.type.dtype = t->dtype;
  for (int64_t d : t->shape) o.type.dims.push_back(DimExpr(d));
  if ((isInteger(t->dtype) || isBool(t->dtype)) && t->numel() <= kMaxKnownElems) {
    o.elems.emplace();
    for (int64_t k = 0; k < t->numel(); ++k) o.elems->push_back(DimExpr(t->getI(k)));
  }
  o.cst = std::move(t);
  return o;
}

DimExpr product(const std::vector<DimExpr>& dims, size_t from, size_t to) {
  DimExpr p(1);
  for (size_t k = from; k < to && k < dims.size(); ++k) p = p * dims[k];
  return p;
}

namespace {
// Why a type computed from the model's shape data cannot be written as a
// program ("" when it can): a negative constant dim (ConstantOfShape of -3),
// a division by zero inside a dim (Reshape's -1 beside a 0 entry), or more
// dims than the language allows. The printed program would not parse again.
std::string badDims(const Type& t) {
  if (t.rank() > size_t(kMaxRank))
    return "has " + std::to_string(t.rank()) + " dims, over the limit of " + std::to_string(kMaxRank);
  std::function<std::string(const DimExpr&)> walk = [&](const DimExpr& e) -> std::string {
    for (const DimTerm& term : e.terms())
      for (const DimAtomPtr& a : term.atoms) {
        bool divides = a->kind == DimAtomKind::Div || a->kind == DimAtomKind::Mod ||
                       a->kind == DimAtomKind::FloorDiv || a->kind == DimAtomKind::CeilDiv;
        if (divides && a->args.size() == 2 && a->args[1].isConst() && a->args[1].constValue() == 0)
          return "divides by zero (" + a->text + ")";
        for (const DimExpr& arg : a->args)
          if (std::string why = walk(arg); !why.empty()) return why;
      }
    return "";
  };
  for (const DimExpr& d : t.dims) {
    if (d.isConst() && d.constValue() < 0) return "has the negative dim " + d.str();
    if (std::string why = walk(d); !why.empty()) return why;
  }
  return "";
}
}  // namespace

std::string Ctx::freshName(const std::string& base) {
  std::string b = sanitize(base);
  if (names.insert(b).second) return b;
  for (int i = 1;; ++i) {
    std::string n = b + "." + std::to_string(i);
    if (names.insert(n).second) return n;
  }
}

Value* Ctx::emit(OpKind kind, std::vector<Value*> operands, std::vector<std::pair<std::string, Attribute>> attrs,
                 std::optional<Type> type, const std::string& name) {
  auto op = std::make_unique<Operation>();
  op->kind = kind;
  op->operands = std::move(operands);
  op->attrs = std::move(attrs);
  auto r = std::make_unique<Value>();
  r->name = freshName(name);
  r->def = op.get();
  if (type) {
    r->type = *type;
    op->hasExplicitType = true;
  }
  op->results.push_back(std::move(r));
  DiagEngine diags(emptySources(), std::cerr);
  diags.setCapture(true);
  FactsOracle oracle(solver);
  if (!inferOpTypes(*f, *op, diags, &oracle)) {
    std::string msg = diags.captured().empty() ? "does not verify" : diags.captured()[0].message;
    // (the example the verifier notes: "e.g. batch = 1")
    if (diags.captured().size() > 1 && diags.captured()[1].message.rfind("e.g. ", 0) == 0)
      msg += " (" + diags.captured()[1].message + ")";
    throw ImportError("cannot convert to '" + std::string(opInfo(kind).name) + "': " + msg);
  }
  op->hasExplicitType = true;
  Value* v = op->result();
  // Dims the user never wrote (a position table's slice gives max(0, min(128, seq)))
  // read as the facts make them: `seq` under `seq in [1, 128]`.
  for (DimExpr& d : v->type.dims) d = simplified(*this, d);
  if (std::string why = badDims(v->type); !why.empty())
    throw ImportError("cannot convert to '" + std::string(opInfo(kind).name) + "': the result " + v->type.str() + " " + why);
  f->ops.push_back(std::move(op));
  opComments.push_back(nodeTag);
  opLabels.push_back(nodeLabel);
  return v;
}

DimExpr simplified(Ctx& c, const DimExpr& a) {
  if (!c.solver || a.isConst() || a.isSymbol()) return a;
  return c.solver->simplify(a);
}

Tri compareDims(Ctx& c, const std::string& op, const DimExpr& a, const DimExpr& b) {
  DimExpr d = a - b;
  if (d.isConst()) {
    int64_t v = d.constValue();
    return (op == "==" ? v == 0 : op == "<" ? v < 0 : v <= 0) ? Tri::Proved : Tri::Disproved;
  }
  if (!c.solver) return Tri::Unknown;
  Answer r = op == "==" ? c.solver->equal(a, b) : op == "<" ? c.solver->lessThan(a, b) : c.solver->lessEqual(a, b);
  return r.tri;
}

Value* Ctx::scalar(DType dt, double v) {
  Attribute a = isFloat(dt) ? Attribute::makeFloat(v)
                : dt == DType::I1 ? Attribute::makeBool(v != 0)
                                  : Attribute::makeInt(static_cast<int64_t>(std::trunc(v)));
  if (isFloat(dt) && !std::isfinite(v)) {
    auto t = std::make_shared<Tensor>(Tensor::zeros(dt, {}));
    t->setF(0, v);
    return constant(t, "k");
  }
  return emit(OpKind::Constant, {}, {{"value", a}}, Type{dt, {}}, "k");
}

Value* Ctx::constant(std::shared_ptr<const Tensor> t, const std::string& name) {
  Type ty{t->dtype, {}};
  for (int64_t d : t->shape) ty.dims.push_back(DimExpr(d));
  int64_t n = t->numel();
  // Small integer tensors (shapes, axes) and tiny float ones are literals; the rest weight files.
  bool literal = n > 0 && n <= (isFloat(t->dtype) ? 4 : 16) && t->dtype != DType::F16 && t->dtype != DType::BF16;
  if (literal && isFloat(t->dtype))
    for (int64_t k = 0; k < n; ++k) literal &= std::isfinite(t->getF(k));
  if (literal) {
    auto elem = [&](int64_t k) {
      if (isFloat(t->dtype)) return Attribute::makeFloat(t->getF(k));
      if (isBool(t->dtype)) return Attribute::makeBool(t->getI(k) != 0);
      return Attribute::makeInt(t->getI(k));
    };
    Attribute a;
    if (t->rank() == 0) {
      a = elem(0);
    } else {
      // Nested lists, innermost dim last.
      int64_t k = 0;
      std::function<Attribute(size_t)> build = [&](size_t d) {
        Attribute l;
        l.kind = Attribute::Kind::List;
        for (int64_t i = 0; i < t->shape[d]; ++i) l.list.push_back(d + 1 == t->rank() ? elem(k++) : build(d + 1));
        return l;
      };
      a = build(0);
      a.kind = Attribute::Kind::Dense;
    }
    return emit(OpKind::Constant, {}, {{"value", a}}, ty, name);
  }
  // NAME.npy, or NAME.K.npy when taken (sanitised names may collide).
  std::string base = weightPrefix + sanitize(name), file = base + ".npy";
  for (int k = 1; weights->count(file); ++k) file = base + "." + std::to_string(k) + ".npy";
  (*weights)[file] = t;
  Attribute a;
  a.kind = Attribute::Kind::File;
  a.s = file;
  a.data = t;
  return emit(OpKind::Constant, {}, {{"value", a}}, ty, name);
}

Value* Ctx::dimValue(const DimExpr& d) {
  std::function<Value*(const DimExpr&)> expr;
  auto atom = [&](const DimAtom& a) -> Value* {
    switch (a.kind) {
      case DimAtomKind::Sym: {
        auto it = symSource.find(a.name);
        if (it == symSource.end()) throw ImportError("the size '" + a.name + "' is not the dim of an input");
        return emit(OpKind::Dim, {it->second.first}, {{"axis", Attribute::makeInt(it->second.second)}}, std::nullopt,
                    a.name);
      }
      case DimAtomKind::Div:
      case DimAtomKind::FloorDiv: return emit(OpKind::Div, {expr(a.args[0]), expr(a.args[1])}, {});
      case DimAtomKind::CeilDiv: {
        Value* b = expr(a.args[1]);
        Value* num = emit(OpKind::Sub, {emit(OpKind::Add, {expr(a.args[0]), b}, {}), scalar(DType::I64, 1)}, {});
        return emit(OpKind::Div, {num, b}, {});
      }
      case DimAtomKind::Min: return emit(OpKind::Min, {expr(a.args[0]), expr(a.args[1])}, {});
      case DimAtomKind::Max: return emit(OpKind::Max, {expr(a.args[0]), expr(a.args[1])}, {});
      case DimAtomKind::Mod: {  // sizes: a - (a / b) * b
        Value *x = expr(a.args[0]), *y = expr(a.args[1]);
        return emit(OpKind::Sub, {x, emit(OpKind::Mul, {emit(OpKind::Div, {x, y}, {}), y}, {})}, {});
      }
      case DimAtomKind::Bcast: {  // numpy's: b where a is 1, else a (they agree, or a run-time check failed)
        Value *x = expr(a.args[0]), *y = expr(a.args[1]);
        return emit(OpKind::Select, {emit(OpKind::Eq, {x, scalar(DType::I64, 1)}, {}), y, x}, {});
      }
      default: throw ImportError("the size " + d.str() + " cannot be computed as a tensor");
    }
  };
  expr = [&](const DimExpr& e) -> Value* {
    Value* acc = nullptr;
    for (const DimTerm& t : e.terms()) {
      Value* term = nullptr;
      for (const DimAtomPtr& a : t.atoms) term = term ? emit(OpKind::Mul, {term, atom(*a)}, {}) : atom(*a);
      if (!term) term = scalar(DType::I64, double(t.coeff));
      else if (t.coeff != 1) term = emit(OpKind::Mul, {term, scalar(DType::I64, double(t.coeff))}, {});
      acc = acc ? emit(OpKind::Add, {acc, term}, {}) : term;
    }
    return acc ? acc : scalar(DType::I64, 0);
  };
  return expr(d);
}

Value* Ctx::use(OValue& o, const std::string& name) {
  if (o.v) return o.v;
  if (o.cst) {
    o.v = constant(o.cst, name);
    return o.v;
  }
  if (!o.elems) throw ImportError("internal: a value with neither IR value nor contents");
  const auto& e = *o.elems;
  auto shape = knownShape(o);
  if (!shape) throw ImportError("internal: known contents that do not fill a static shape");
  bool allConst = true;
  for (const auto& d : e) allConst &= d.isConst();
  if (allConst) {
    auto t = std::make_shared<Tensor>(Tensor::zeros(o.type.dtype, *shape));
    for (size_t k = 0; k < e.size(); ++k) t->setI(int64_t(k), e[k].constValue());
    o.cst = t;
    o.v = constant(t, name);
    return o.v;
  }
  // Each element computed from the arguments' dims, as [1] vectors concatenated and reshaped to the value's shape.
  std::vector<Value*> parts;
  for (const auto& d : e) {
    Value* s = dimValue(d);
    if (o.type.dtype != DType::I64) s = emit(OpKind::Cast, {s}, {{"to", Attribute::makeDType(o.type.dtype)}});
    if (o.type.rank() > 0) s = emit(OpKind::Reshape, {s}, {}, Type{o.type.dtype, {DimExpr(1)}});
    parts.push_back(s);
  }
  bool matrix = o.type.rank() > 1;
  Value* flat = o.type.rank() == 0 ? parts[0]
                                   : emit(OpKind::Concat, parts, {{"axis", Attribute::makeInt(0)}}, std::nullopt,
                                          matrix ? "t" : name);
  o.v = matrix ? emit(OpKind::Reshape, {flat}, {}, o.type, name) : flat;
  return o.v;
}

OValue Ctx::wrap(Value* v) const {
  OValue o;
  o.v = v;
  o.type = v->type;
  return o;
}

bool isOnnxPath(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

namespace {

// A node computed from a value whose integer contents a fold could not decide (Ctx::unknownWhy) leaves its outputs
// unknown for the same reason, unless it knows them itself.
void carryUnknownWhy(Ctx& c, const onnx::NodeProto& n) {
  std::string why;
  for (const auto& i : n.input())
    if (auto it = c.unknownWhy.find(i); !i.empty() && it != c.unknownWhy.end()) {
      why = it->second;
      break;
    }
  if (why.empty()) return;
  for (const auto& o : n.output())
    if (auto it = c.vals.find(o); !o.empty() && it != c.vals.end() && !it->second.elems && !c.unknownWhy.count(o))
      c.unknownWhy[o] = why;
}

// The IR symbol of a dim named `name` (a dim_param, or a generated
// `input_dK`). A name that is an identifier is its own symbol; one that
// sanitize changes gets a fresh one, so that two distinct dim_params ("a b"
// and "a_b") never merge into one size.
std::string dimSymbol(Ctx& c, const std::string& name, bool generated) {
  auto key = std::make_pair(generated, name);
  if (auto it = c.dimSyms.find(key); it != c.dimSyms.end()) return it->second;
  std::string s = sanitize(name);
  if (generated || s != name) {
    std::string base = s;
    for (int k = 1; c.takenSyms.count(s); ++k) s = base + "_" + std::to_string(k);
  }
  c.takenSyms.insert(s);
  c.dimSyms.emplace(key, s);
  return s;
}

// Speaks for the names the graph's inputs use as they are (identifier
// dim_params and the names inside dim_param expressions) before any
// sanitised name is handed out.
void reserveDimNames(Ctx& c, const onnx::GraphProto& g) {
  for (const auto& vi : g.input()) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) continue;
    for (const auto& d : vi.type().tensor_type().shape().dim()) {
      if (!d.has_dim_param() || d.dim_param().empty()) continue;
      const std::string& p = d.dim_param();
      if (sanitize(p) == p) {
        c.takenSyms.insert(p);
        continue;
      }
      std::string why;
      if (auto e = parseDimExpr(p, &why); e && !e->isConst()) e->collectSymbols(c.takenSyms);
    }
  }
}

// An initializer that is also a graph input (its default value) must fit
// the input's declared type: its element type and every fixed dim.
void checkInitializerInput(const onnx::ValueInfoProto& vi, const onnx::TensorProto& t, const Tensor& value) {
  if (!vi.type().has_tensor_type()) return;
  const auto& tt = vi.type().tensor_type();
  if (tt.elem_type() != 0 && tt.elem_type() != t.data_type())
    throw ImportError("its data type " + onnxTypeName(t.data_type()) + " differs from the graph input's " +
                      onnxTypeName(tt.elem_type()));
  if (!tt.has_shape()) return;
  std::string have = "[", want = "[";
  bool ok = tt.shape().dim_size() == static_cast<int>(value.rank());
  for (int k = 0; k < tt.shape().dim_size(); ++k) {
    const auto& d = tt.shape().dim(k);
    want += (k ? ", " : "") + (d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param().empty() ? "?" : d.dim_param());
    if (ok && d.has_dim_value() && d.dim_value() != value.shape[static_cast<size_t>(k)]) ok = false;
  }
  for (size_t k = 0; k < value.rank(); ++k) have += (k ? ", " : "") + std::to_string(value.shape[k]);
  if (!ok) throw ImportError("its shape " + have + "] differs from the graph input's declared shape " + want + "]");
}

// The dims of a graph input's type; symbols record where their size comes from.
Type inputType(Ctx& c, const onnx::ValueInfoProto& vi, const ImportOptions& opts) {
  if (!vi.type().has_tensor_type())
    throw ImportError("not a tensor (sequences, maps and optionals are not supported)");
  const auto& tt = vi.type().tensor_type();
  Type ty;
  ty.dtype = dtypeOf(tt.elem_type());
  if (!tt.has_shape()) throw ImportError("no shape (not even its rank)");
  if (tt.shape().dim_size() > kMaxRank)
    throw ImportError(std::to_string(tt.shape().dim_size()) + " dims, over the limit of " + std::to_string(kMaxRank));
  for (int k = 0; k < tt.shape().dim_size(); ++k) {
    const auto& d = tt.shape().dim(k);
    if (d.has_dim_value() && !opts.symbolicDims) {
      if (d.dim_value() < 0) throw ImportError("a negative dim");
      ty.dims.push_back(DimExpr(d.dim_value()));
    } else {
      const std::string& p = d.dim_param();
      if (d.has_dim_param() && !p.empty() && sanitize(p) != p) {
        // A dim_param that is an expression over names (`batch*seq`) is that expression.
        std::string why;
        if (auto e = parseDimExpr(p, &why); e && !e->isConst()) {
          ty.dims.push_back(*e);
          continue;
        }
      }
      bool named = d.has_dim_param() && !p.empty();
      ty.dims.push_back(DimExpr::symbol(dimSymbol(c, named ? p : vi.name() + "_d" + std::to_string(k), !named)));
    }
  }
  return ty;
}

// The node, its op and opset, and the types of its inputs as dim expressions
// (`node 'fc/MatMul' (MatMul, opset 14; inputs f32[batch, 4], f32[4, 3])`).
std::string nodeLabel(const Ctx& c, const onnx::NodeProto& n, int index, int64_t opset) {
  std::string who = n.name().empty() ? "#" + std::to_string(index) : "'" + n.name() + "'";
  std::string s = "node " + who + " (" + n.op_type() + ", opset " + std::to_string(opset);
  std::string ins;
  for (int i = 0; i < n.input_size(); ++i) {
    if (i == 6) {
      ins += ", ...";
      break;
    }
    auto it = n.input(i).empty() ? c.vals.end() : c.vals.find(n.input(i));
    ins += (i ? ", " : "") + (it == c.vals.end() ? std::string("-") : it->second.type.str());
  }
  if (!ins.empty()) s += "; inputs " + ins;
  return s + ")";
}

// The program text: one op a line, each with the node it came from;
// `labels` gets each line's origin in the model.
std::string programText(const Ctx& c, const std::vector<std::string>& facts, std::map<int, std::string>& labels) {
  const Function& f = *c.f;
  std::string s = "// Imported from ONNX by `dscc import`.\nfunc @main(";
  int line = 2;
  labels[line] = "graph inputs and outputs";
  for (size_t i = 0; i < f.args.size(); ++i) s += (i ? ", %" : "%") + f.args[i]->name + ": " + f.args[i]->type.str();
  s += ") -> ";
  s += printResultTypes(f);
  if (!facts.empty()) {
    s += "\n    where ";
    labels[++line] = "--where";
    for (size_t i = 0; i < facts.size(); ++i) s += (i ? ", " : "") + facts[i];
  }
  s += " {\n";
  for (size_t k = 0; k < f.ops.size(); ++k) {
    s += "  " + printOp(*f.ops[k]);
    if (!c.opComments[k].empty()) s += "  // " + c.opComments[k];
    s += "\n";
    labels[++line] = c.opLabels[k].empty() ? "graph outputs" : c.opLabels[k];
  }
  labels[++line] = "graph outputs";
  s += "  return";
  for (size_t i = 0; i < f.returns.size(); ++i) s += (i ? ", %" : " %") + f.returns[i]->name;
  s += "\n}\n";
  return s;
}

}  // namespace

bool importOnnx(const std::string& path, const ImportOptions& opts, const std::string& weightPrefix, Imported& out,
                std::ostream& err) {
  auto fail = [&](const std::string& msg) {
    err << path << ": error: " << msg << "\n";
    return false;
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(std::string("cannot open: ") + std::strerror(errno));
  // Parsed from the stream (no second copy of a large model's bytes).
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) return fail("not a valid ONNX model (the protobuf does not parse)");
  in.close();
  if (!model.has_graph()) return fail("not a valid ONNX model (no graph)");
  int64_t opset = -1;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    else return fail("operator set domain '" + o.domain() + "' is not supported");
  if (opset < 0) opset = model.ir_version() < 3 ? 1 : -1;
  if (opset < 0) return fail("the model imports no opset of the default domain");
  // The checker knows the opsets up to this library's; a newer model is not
  // refused for that, only checked where the library can.
  int64_t known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
  // External data is resolved against the model's folder before anything
  // reads it; a location that leaves the folder is refused here.
  ExternalData external(path);
  std::vector<std::pair<onnx::StringStringEntryProto*, std::string>> relocated;  // (entry, its location)
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    for (auto& kv : *t.mutable_external_data()) {
      if (kv.key() != "location") continue;
      std::string full;
      try {
        full = external.resolve(kv.value());
      } catch (const ImportError& e) {
        return fail("initializer '" + t.name() + "': " + e.what());
      }
      relocated.emplace_back(&kv, kv.value());
      kv.set_value(full);  // the checker looks for the file from the working folder: give it the resolved path
    }
  }
  if (opset <= known) {
    try {
      onnx::checker::check_model(model);
    } catch (const std::exception& e) {
      std::string what = e.what();
      while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
      return fail("the ONNX checker rejects the model: " + what);
    }
  }
  for (auto& [kv, location] : relocated) kv->set_value(location);
  // ONNX's own shape inference (with data propagation), as a cross-check of
  // the static dims dscc derives; only where the library knows the opset.
  std::map<std::string, std::vector<int64_t>> inferred;  // -1: a dim it leaves open
  if (opset <= known) {
    try {
      onnx::ShapeInferenceOptions sio(false, 0, true);
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), sio);
      for (const auto& vi : model.graph().value_info()) {
        if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) continue;
        std::vector<int64_t> dims;
        for (const auto& d : vi.type().tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
        inferred[vi.name()] = dims;
      }
    } catch (const std::exception&) {
      inferred.clear();  // the library's inference failed: nothing to compare with
    }
  }
  const onnx::GraphProto& g = model.graph();
  auto module = std::make_unique<Module>();
  module->funcs.push_back(std::make_unique<Function>());
  Ctx c;
  ShapeSolver solver;
  c.solver = &solver;
  c.f = module->funcs[0].get();
  c.f->name = "main";
  c.weights = &out.weights;
  c.weightPrefix = weightPrefix;
  c.external = &external;
  c.opset = opset;
  std::string where;  // the graph part being read, for messages
  try {
    std::set<std::string> inits;
    for (const auto& t : g.initializer()) inits.insert(t.name());
    if (g.sparse_initializer_size()) throw ImportError("sparse initializers are not supported");
    reserveDimNames(c, g);
    std::map<std::string, const onnx::ValueInfoProto*> inputInfo;  // graph inputs by name, for their initializers
    for (const auto& vi : g.input()) inputInfo.emplace(vi.name(), &vi);
    for (const auto& vi : g.input()) {
      where = "graph input '" + vi.name() + "': ";
      if (inits.count(vi.name())) continue;  // an initializer listed as an input: a constant (checked below)
      if (auto it = opts.consts.find(vi.name()); it != opts.consts.end()) {
        std::string e;
        auto t = readNpy(it->second, &e);
        if (!t) throw ImportError("--const: " + e);
        c.vals[vi.name()] = constantValue(std::make_shared<Tensor>(std::move(*t)));
        continue;
      }
      auto arg = std::make_unique<Value>();
      arg->name = c.freshName(vi.name());
      arg->type = inputType(c, vi, opts);
      arg->index = int(c.f->args.size());
      for (size_t k = 0; k < arg->type.rank(); ++k)
        if (arg->type.dims[k].isSymbol() && !c.symSource.count(arg->type.dims[k].symbolName()))
          c.symSource[arg->type.dims[k].symbolName()] = {arg.get(), int(k)};
      out.inputNames[vi.name()] = arg->name;
      c.vals[vi.name()] = c.wrap(arg.get());
      c.f->args.push_back(std::move(arg));
    }
    where = "";
    if (!opts.facts.empty()) {
      // The facts as the program will state them, over the inputs' dims; one
      // that does not parse, or names a dim the model does not have, is an
      // error here (the program written would not parse again).
      std::string text = "func @main(";
      for (const auto& a : c.f->args) text += "%" + a->name + ": " + a->type.str() + ", ";
      text += "%ret__: f32[]) -> f32[] where ";
      for (size_t k = 0; k < opts.facts.size(); ++k) text += (k ? ", " : "") + opts.facts[k];
      text += " {\n  return %ret__\n}\n";
      SourceMgr sm;
      std::ostringstream sink;
      DiagEngine d(sm, sink);
      d.setCapture(true);
      auto fm = parseModule(sm, sm.addBuffer("--where", text), d);
      if (!fm || fm->funcs.empty() || d.errorCount()) {
        std::set<std::string> syms;
        for (const auto& a : c.f->args)
          for (const DimExpr& dim : a->type.dims) dim.collectSymbols(syms);
        std::string names;
        for (const auto& n : syms) names += (names.empty() ? "" : ", ") + n;
        std::string why = d.captured().empty() ? "does not parse" : d.captured()[0].message;
        throw ImportError("--where: " + why + " (the model's dims are: " + (names.empty() ? "none" : names) + ")");
      }
      for (const Fact& fact : fm->funcs[0]->facts) solver.addFact(fact);
    }
    where = "";
    for (const auto& [name, file] : opts.consts) {
      bool found = false;
      for (const auto& vi : g.input()) found |= vi.name() == name;
      if (!found) throw ImportError("--const " + name + ": the graph has no input '" + name + "'");
    }
    for (int ti = 0; ti < g.initializer_size(); ++ti) {
      const onnx::TensorProto& t = g.initializer(ti);
      where = "initializer '" + t.name() + "': ";
      OValue o = constantValue(tensorOf(t, c.external));
      // The proto's copy of the data is no longer needed: a model's weights are held once.
      onnx::TensorProto* mt = model.mutable_graph()->mutable_initializer(ti);
      std::string().swap(*mt->mutable_raw_data());
      mt->clear_float_data(), mt->clear_int64_data(), mt->clear_int32_data(), mt->clear_double_data();
      if (auto it = inputInfo.find(t.name()); it != inputInfo.end()) checkInitializerInput(*it->second, t, *o.cst);
      c.vals[t.name()] = o;
    }
    for (int k = 0; k < g.node_size(); ++k) {
      const auto& n = g.node(k);
      c.nodeLabel = nodeLabel(c, n, k, opset);
      where = c.nodeLabel + ": ";
      if (!n.domain().empty() && n.domain() != "ai.onnx") throw ImportError("domain '" + n.domain() + "' is not supported");
      c.nodeTag = "node " + (n.name().empty() ? "#" + std::to_string(k) : "'" + n.name() + "'") + " (" + n.op_type() + ")";
      for (int i = 0; i < n.input_size(); ++i)
        if (!n.input(i).empty() && !c.vals.count(n.input(i)))
          throw ImportError("input '" + n.input(i) + "' is not defined before the node");
      if (!foldNode(c, n)) convertNode(c, n);
      carryUnknownWhy(c, n);
    }
    c.nodeTag = "";
    c.nodeLabel = "";
    for (const auto& vi : g.output()) {
      where = "graph output '" + vi.name() + "': ";
      auto it = c.vals.find(vi.name());
      if (it == c.vals.end()) throw ImportError("no node computes it");
      Value* v = c.use(it->second, vi.name());
      c.f->returns.push_back(v);
      c.f->resultTypes.push_back(v->type);
      // The output keeps the model's name (a repeated one stays unnamed after its first use).
      bool repeated = std::count(out.outputNames.begin(), out.outputNames.end(), vi.name()) > 0;
      c.f->resultNames.push_back(repeated ? "" : vi.name());
      out.outputNames.push_back(vi.name());
    }
    if (g.output_size() == 0) throw ImportError("the graph has no outputs");
  } catch (const ImportError& e) {
    return fail(where + e.what());
  }
  int disagree = 0;
  for (const auto& [name, dims] : inferred) {
    auto it = c.vals.find(name);
    if (it == c.vals.end()) continue;
    const Type& t = it->second.type;
    bool same = t.rank() == dims.size();
    for (size_t k = 0; same && k < dims.size(); ++k)
      same = dims[k] < 0 || !t.dims[k].isConst() || t.dims[k].constValue() == dims[k];
    if (same) continue;
    if (++disagree > 5) continue;
    std::string theirs = "[";
    for (size_t k = 0; k < dims.size(); ++k) theirs += (k ? ", " : "") + (dims[k] < 0 ? std::string("?") : std::to_string(dims[k]));
    err << path << ": warning: ONNX shape inference gives " << theirs << "] for '" << name << "', dscc "
        << t.str() << "\n";
  }
  if (disagree > 5) err << path << ": warning: ... and " << disagree - 5 << " more shape inference disagreements\n";
  out.text = programText(c, opts.facts, out.lineLabels);
  return true;
}

std::unique_ptr<Module> importOnnxModule(const std::string& path, const ImportOptions& opts, SourceMgr& sm,
                                         DiagEngine& diags, std::ostream& err, Imported* names) {
  Imported imp;
  if (!importOnnx(path, opts, "", imp, err)) return nullptr;
  int id = sm.addBuffer(path, imp.text);
  sm.setGenerated(id, imp.lineLabels);
  auto m = parseModule(sm, id, diags);
  if (!m) return nullptr;
  for (auto& f : m->funcs)
    walkOps(f->ops, [&](Operation& op) {
      const Attribute* v = op.attr("value");
      if (op.kind != OpKind::Constant || !v || v->kind != Attribute::Kind::File) return;
      auto it = imp.weights.find(v->s);
      if (it == imp.weights.end()) return;
      Attribute a = *v;
      a.data = it->second;
      op.setAttr("value", a);
    });
  if (!loadFileConstants(*m, diags)) return nullptr;
  if (names) *names = std::move(imp);
  return m;
}

bool writeImported(const Imported& imp, const std::string& dscPath, std::string* err) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(dscPath).parent_path();
  for (const auto& [file, t] : imp.weights)
    if (!writeNpy((dir / file).string(), *t, err)) return false;
  std::ofstream o(dscPath, std::ios::binary);
  if (!o || !(o << imp.text) || !o.flush()) {
    *err = "cannot write '" + dscPath + "'";
    return false;
  }
  return true;
}

}  // namespace dscc::frontend
