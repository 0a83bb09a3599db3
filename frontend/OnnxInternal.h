// Shared state of the ONNX importer: values known at import time, the function being built, op helpers.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/OnnxImporter.h"
#include "ir/IR.h"
#include "ir/Tensor.h"
#include "ir/Verifier.h"
#include "passes/ShapeSolver.h"

namespace onnx {
class NodeProto;
class TensorProto;
class AttributeProto;
}  // namespace onnx

namespace dscc::frontend {

/// A list attribute of integers ({axes = [0, 2]}).
inline Attribute intList(const std::vector<int64_t>& v) {
  std::vector<Attribute> l;
  for (int64_t x : v) l.push_back(Attribute::makeInt(x));
  return Attribute::makeList(l);
}

/// An import error about the current node; the driver adds the file and node.
struct ImportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The external-data files of one model (ONNX's `data_location: EXTERNAL`):
/// each location is resolved against the model's folder, must stay inside it,
/// and is mapped once; tensors copy their bytes out of the mapping, so a
/// model's weights are held once, as for weights inside the protobuf.
class ExternalData {
 public:
  /// For the model file `modelPath` (its folder is where locations point).
  explicit ExternalData(const std::string& modelPath);
  ~ExternalData();
  ExternalData(const ExternalData&) = delete;
  ExternalData& operator=(const ExternalData&) = delete;
  /// The absolute path of `location`; throws ImportError when it is absolute
  /// or leaves the model's folder (by `..` or by a symbolic link).
  std::string resolve(const std::string& location) const;
  /// The `need` bytes of tensor `t`'s data (its `location`, `offset`,
  /// `length`); throws ImportError when the file is missing, not a regular
  /// file, too short, or the length disagrees with the tensor's elements.
  std::string_view bytes(const onnx::TensorProto& t, size_t need);

 private:
  struct Map {
    const char* data = nullptr;
    size_t size = 0;
  };
  const Map& map(const std::string& location);
  std::string dir_;
  std::map<std::string, Map> maps_;
};

/// One ONNX value: its type, its IR value once materialised, and what is
/// known of its contents at import time (shape arithmetic is folded).
struct OValue {
  Type type;
  Value* v = nullptr;                    ///< the IR value (null until needed)
  std::shared_ptr<const Tensor> cst;     ///< known contents (static shape)
  /// Known integer contents, maybe symbolic ("size values"): row-major over `type.dims`, which are then all
  /// constants, at most kMaxKnownElems of them.
  std::optional<std::vector<DimExpr>> elems;
};

/// The most elements a value's known contents (OValue::elems) may have; larger results are computed as tensors.
constexpr int64_t kMaxKnownElems = 64;

/// An OValue of dtype `dt` and static shape `shape` whose contents are known: `e`, row-major.
OValue knownValue(DType dt, const std::vector<int64_t>& shape, std::vector<DimExpr> e);
/// The static shape of `v` when its contents are known (OValue::elems), else nullopt.
std::optional<std::vector<int64_t>> knownShape(const OValue& v);

/// The importer's verification of each op it emits (Ctx::emit): the structural answers (ShapeOracle's), and where
/// they are Unknown, the `--where` facts' Disproved. A relation the facts rule out everywhere (a reshape to another
/// element count at every allowed size, as a TorchScript trace with a wrong constant head count writes it) is then
/// refused at the node that writes it, not at a later node whose operands no longer fit (shape analysis would refuse
/// it too, but only after the whole import). What the facts merely prove stays as structural verification has it,
/// so that the program imported does not depend on them.
class FactsOracle : public ShapeOracle {
 public:
  /// `s`: the import's solver with the facts (null: structural answers only).
  explicit FactsOracle(ShapeSolver* s) : s_(s) {}
  Tri equal(const DimExpr& a, const DimExpr& b) override {
    Tri t = ShapeOracle::equal(a, b);
    return t == Tri::Unknown ? disproved(s_ ? s_->equal(a, b) : Answer{}) : t;
  }
  Tri broadcastable(const DimExpr& a, const DimExpr& b) override {
    Tri t = ShapeOracle::broadcastable(a, b);
    return t == Tri::Unknown ? disproved(s_ ? s_->broadcastable(a, b) : Answer{}) : t;
  }
  std::string counterexample() override { return example_; }

 private:
  Tri disproved(const Answer& a) {
    if (a.tri != Tri::Disproved) return Tri::Unknown;
    example_ = a.example;
    return Tri::Disproved;
  }
  ShapeSolver* s_;
  std::string example_;
};

/// The importer's state while one graph is converted.
struct Ctx {
  Function* f = nullptr;
  std::map<std::string, OValue> vals;
  std::set<std::string> names;  ///< IR value names used so far
  std::map<std::string, std::pair<Value*, int>> symSource;  ///< symbol -> (argument, axis) it is the size of
  std::map<std::string, std::shared_ptr<const Tensor>>* weights = nullptr;
  std::string weightPrefix;
  ExternalData* external = nullptr;  ///< the model's external-data files (null: none may be read)
  /// Decides relations of dims under the `--where` facts (dims are sizes,
  /// never negative): comparisons of shape values fold, and the dims of
  /// every result are simplified against the facts.
  ShapeSolver* solver = nullptr;
  int64_t opset = 0;       ///< the default domain's opset
  std::string nodeTag;     ///< `node 'N' (Op)`, for the comments of the ops it emits
  std::vector<std::string> opComments;  ///< per op of f, what ONNX node it came from
  std::string nodeLabel;   ///< the node with its opset and input shapes, for diagnostics
  std::vector<std::string> opLabels;    ///< per op of f, its node's nodeLabel
  /// Why a value's integer contents are unknown when a fold could not decide them (a division by a size that the
  /// facts do not prove positive), by value name; carried to the values computed from it, and told where a later
  /// node needs them known (knownInts).
  std::map<std::string, std::string> unknownWhy;
  /// Symbols of the graph inputs' dims: (generated, dim_param or generated name) -> IR symbol.
  std::map<std::pair<bool, std::string>, std::string> dimSyms;
  /// Symbol names spoken for: dim_params that are identifiers already, the
  /// names in dim_param expressions, and every symbol handed out.
  std::set<std::string> takenSyms;

  /// A fresh, valid IR name derived from `base`.
  std::string freshName(const std::string& base);
  /// Builds op `kind` and appends it; throws ImportError when it does not verify.
  Value* emit(OpKind kind, std::vector<Value*> operands, std::vector<std::pair<std::string, Attribute>> attrs,
              std::optional<Type> type = std::nullopt, const std::string& name = "t");
  /// The IR value of `o` (constants and known dims are materialised on first use).
  Value* use(OValue& o, const std::string& name = "c");
  /// A scalar constant of dtype `dt`.
  Value* scalar(DType dt, double v);
  /// A constant tensor: literal when small and integral, else a weight file.
  Value* constant(std::shared_ptr<const Tensor> t, const std::string& name);
  /// A dim expression as an `i64[]` value computed from the arguments' dims.
  Value* dimValue(const DimExpr& d);
  /// An OValue wrapping an IR value.
  OValue wrap(Value* v) const;
};

/// `a` simplified against the facts (min/max/bcast the solver decides).
DimExpr simplified(Ctx& c, const DimExpr& a);
/// Proved, Disproved or Unknown: `a OP b` for OP one of == < <= (sizes are non-negative).
Tri compareDims(Ctx& c, const std::string& op, const DimExpr& a, const DimExpr& b);

/// An OValue holding the constant `t`; an integer or bool one of at most
/// kMaxKnownElems elements (any rank) also has its elements as known values (a
/// shape, axes, bounds, a [-1, 2] matrix of pads), so shape arithmetic over it folds.
OValue constantValue(std::shared_ptr<const Tensor> t);

/// Sanitises `s` into an IR identifier (`[A-Za-z_][A-Za-z0-9_.$]*`, no keyword).
std::string sanitize(const std::string& s);
/// The dscc dtype of ONNX TensorProto data type `t`; throws ImportError for others.
DType dtypeOf(int t);
/// The contents of a TensorProto, external data read through `ext`; throws
/// ImportError on what cannot be read.
std::shared_ptr<Tensor> tensorOf(const onnx::TensorProto& t, ExternalData* ext = nullptr);
/// The product of `dims[from, to)`.
DimExpr product(const std::vector<DimExpr>& dims, size_t from, size_t to);

/// Converts one node: reads its inputs from ctx.vals, defines its outputs.
/// Throws ImportError for what it cannot convert.
void convertNode(Ctx& c, const onnx::NodeProto& n);

/// The less common operators (frontend/OnnxMoreOps.cpp); false if `n`'s op is not one of them.
bool convertMore(Ctx& c, const onnx::NodeProto& n);

/// Opset 23's transformer operators (frontend/OnnxOpset23.cpp: RMSNormalization,
/// RotaryEmbedding, Attention); false if `n`'s op is not one of them.
bool convertOpset23(Ctx& c, const onnx::NodeProto& n);

/// Conv, MaxPool and AveragePool as `conv` and `pool` (frontend/OnnxVision.cpp); false if `n`'s op is not one of them.
bool convertVision(Ctx& c, const onnx::NodeProto& n);
/// LSTM, GRU and RNN as `rnn` (frontend/OnnxRecurrent.cpp); false if `n`'s op is not one of them.
bool convertRecurrent(Ctx& c, const onnx::NodeProto& n);
/// ScatterND, ScatterElements, Scatter as `scatter` and CumSum as `cumsum` (frontend/OnnxScatter.cpp); false if
/// `n`'s op is not one of them.
bool convertScatter(Ctx& c, const onnx::NodeProto& n);

/// Resize and Upsample as iota, elementwise math and gathers per resized axis
/// (frontend/OnnxResize.cpp); false if `n`'s op is not one of them.
bool convertResize(Ctx& c, const onnx::NodeProto& n);

/// Tries to fold a node over known values (shape arithmetic); true if it did.
bool foldNode(Ctx& c, const onnx::NodeProto& n);
/// Folds data movement (Reshape, Transpose, Slice, Concat, Gather, Squeeze, Unsqueeze, Expand, Flatten, Identity)
/// and elementwise integer ops (arithmetic, comparisons, Where, Cast, Neg, Not, broadcasting) over inputs whose
/// contents are known, of any rank (frontend/OnnxKnown.cpp); true if it did.
bool foldKnown(Ctx& c, const onnx::NodeProto& n);

/// Node attribute helpers (absent: the default).
int64_t attrInt(const onnx::NodeProto& n, const std::string& name, int64_t dflt);
double attrFloat(const onnx::NodeProto& n, const std::string& name, double dflt);
std::string attrString(const onnx::NodeProto& n, const std::string& name, const std::string& dflt);
std::optional<std::vector<int64_t>> attrInts(const onnx::NodeProto& n, const std::string& name);
const onnx::AttributeProto* findAttr(const onnx::NodeProto& n, const std::string& name);

/// Input `i` of `n` (null when absent or empty-named).
OValue* input(Ctx& c, const onnx::NodeProto& n, int i);
/// Input `i`, which must be present.
OValue& need(Ctx& c, const onnx::NodeProto& n, int i);
/// The known integer contents of input `i` (a shape, axes, bounds); throws if unknown.
std::vector<DimExpr> knownInts(Ctx& c, const onnx::NodeProto& n, int i, const char* what);
/// The known constant integers of input `i`; throws if unknown or symbolic.
std::vector<int64_t> constInts(Ctx& c, const onnx::NodeProto& n, int i, const char* what);
/// Defines output `i` of `n` (ignored when the node does not name it).
void define(Ctx& c, const onnx::NodeProto& n, int i, OValue v);

}  // namespace dscc::frontend
