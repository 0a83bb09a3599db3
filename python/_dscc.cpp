// _dscc: the C++ half of the `dscc` Python module: compiled models (dlopen'ed .so files) called with NumPy arrays,
// and `dscc compile` run in this process.
#include <dlfcn.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ir/Parser.h"
#include "runtime/dscc_runtime.h"
#include "tools/Commands.h"

namespace py = pybind11;

namespace {

// dscc.Error and one subclass per status (index = dscc_status); created at import.
PyObject* gErrors[7] = {};

// A non-OK status from the runtime (or a check of ours with the same meaning), as the Python exception.
struct StatusError {
  dscc_status status;
  std::string message;
};

[[noreturn]] void fail(dscc_status s, const std::string& msg) { throw StatusError{s, msg}; }

// Bytes per element of a dtype (i1 is one byte), as the ABI stores them.
size_t elementBytes(dscc_dtype t) {
  switch (t) {
    case DSCC_F64:
    case DSCC_I64: return 8;
    case DSCC_F32:
    case DSCC_I32: return 4;
    case DSCC_F16:
    case DSCC_BF16: return 2;
    case DSCC_I8:
    case DSCC_I1: return 1;
  }
  return 4;
}

// NumPy's dtype for an IR dtype; bf16 has none, so it travels as uint16 bits.
py::dtype numpyDtype(dscc_dtype t) {
  switch (t) {
    case DSCC_F32: return py::dtype("float32");
    case DSCC_F16: return py::dtype("float16");
    case DSCC_BF16: return py::dtype("uint16");
    case DSCC_F64: return py::dtype("float64");
    case DSCC_I64: return py::dtype("int64");
    case DSCC_I32: return py::dtype("int32");
    case DSCC_I8: return py::dtype("int8");
    case DSCC_I1: return py::dtype("bool");
  }
  return py::dtype("float32");
}

/// A runtime context: a thread pool. Calls on one context may run concurrently.
class Context {
 public:
  explicit Context(int threads) : ctx_(dscc_context_create(threads)) {
    if (!ctx_) fail(DSCC_INVALID_ARGUMENT, std::string("cannot create a context: ") + dscc_status_message(nullptr));
  }
  ~Context() { dscc_context_release(ctx_); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  /// The threads its calls use, the calling thread included.
  int threads() const { return dscc_context_num_threads(ctx_); }
  dscc_context* get() const { return ctx_; }
  /// Whether the context records its launches and library calls (dscc_context_set_profiling).
  bool profiling() const { return dscc_context_profiling(ctx_) != 0; }
  void setProfiling(bool on) { dscc_context_set_profiling(ctx_, on ? 1 : 0); }
  /// The records so far, as dicts with the fields of dscc_profile_record (sizes by name).
  py::list profile() const {
    py::list out;
    for (int64_t i = 0; i < dscc_profile_count(ctx_); ++i) {
      dscc_profile_record r;
      if (dscc_profile_get(ctx_, i, &r) != DSCC_OK) break;
      py::dict sizes;
      for (int32_t k = 0; k < r.n_sizes; ++k) sizes[py::str(r.size_names[k])] = r.sizes[k];
      py::dict d;
      d["name"] = r.name;
      d["kind"] = r.kind;
      d["version"] = r.version;
      d["function"] = r.function;
      d["call"] = r.call == DSCC_PROFILE_GEMM     ? "gemm"
                  : r.call == DSCC_PROFILE_COPY   ? "copy"
                  : r.call == DSCC_PROFILE_WINDOW ? "window"
                                                  : "kernel";
      d["sizes"] = sizes;
      d["bytes_expr"] = r.bytes_expr;
      d["units"] = r.units;
      d["bytes"] = r.bytes;
      d["flops"] = r.flops;
      d["thread"] = r.thread;
      d["start_ns"] = r.start_ns;
      d["end_ns"] = r.end_ns;
      out.append(d);
    }
    return out;
  }
  void clearProfile() { dscc_profile_clear(ctx_); }

 private:
  dscc_context* ctx_;
};

/// One input or output of a model, as its program declares it.
struct TensorSpec {
  std::string name;   ///< the IR value's name, without '%'
  std::string type;   ///< e.g. "f32[B, S, 768]"
  dscc_dtype dtype = DSCC_F32;
  int rank = 0;
  std::vector<std::string> dims;  ///< each dim's expression, e.g. "B", "768", "2*S"
};

/// A compiled model (`dscc compile` output) loaded into this process.
class Model {
 public:
  explicit Model(const std::string& path) : path_(path) {
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) fail(DSCC_INVALID_ARGUMENT, "cannot load '" + path + "': " + dlerror());
    run_ = reinterpret_cast<dscc_run_fn>(dlsym(handle_, "dscc_model_run"));
    auto* source = static_cast<const char*>(dlsym(handle_, "dscc_model_source"));
    auto* entry = static_cast<const char*>(dlsym(handle_, "dscc_model_entry"));
    auto* target = static_cast<const char*>(dlsym(handle_, "dscc_model_target"));
    if (!run_ || !source || !entry) {
      dlclose(handle_);
      fail(DSCC_INVALID_ARGUMENT, "'" + path + "' is not a model compiled by dscc (no dscc_model_run)");
    }
    entry_ = entry;
    target_ = target ? target : "cpu";
    source_ = source;
    readSignature();
  }
  ~Model() {
    if (handle_) dlclose(handle_);
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::vector<TensorSpec>& inputs() const { return inputs_; }
  const std::vector<TensorSpec>& outputs() const { return outputs_; }
  const std::string& entry() const { return entry_; }
  const std::string& target() const { return target_; }
  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }

  /// The tensors of one call: `args` (one array per input, in order)
  /// checked and made C-contiguous, and the outputs, either `into`'s arrays
  /// (checked) or empty ones the model allocates.
  struct Prepared {
    std::vector<py::array> held;  // the arrays the tensors point into, alive as long as this
    std::vector<std::vector<int64_t>> inDims, outDims;
    std::vector<dscc_tensor> in, out;
  };
  Prepared prepare(const std::vector<py::array>& args, const std::optional<std::vector<py::array>>& into) const {
    if (target_ != "cpu")
      fail(DSCC_UNAVAILABLE, "'" + path_ + "' is a " + target_ + " model; the Python module runs CPU models only");
    if (args.size() != inputs_.size())
      fail(DSCC_INVALID_ARGUMENT, "@" + entry_ + " takes " + std::to_string(inputs_.size()) + " inputs, got " +
                                      std::to_string(args.size()));
    Prepared p;
    std::vector<py::array>& held = p.held;
    std::vector<std::vector<int64_t>>& inDims = p.inDims;
    std::vector<dscc_tensor>& in = p.in;
    inDims.resize(args.size());
    in.resize(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const TensorSpec& s = inputs_[i];
      py::array a = args[i];
      py::dtype want = numpyDtype(s.dtype);
      if (!a.dtype().is(want) && !a.dtype().equal(want))
        fail(DSCC_SHAPE_MISMATCH, "@" + entry_ + ": input " + std::to_string(i) + " (%" + s.name + ") has dtype " +
                                      std::string(py::str(a.dtype())) + ", expected " +
                                      std::string(py::str(want)) + " (" + s.type + ")");
      if (a.ndim() != s.rank)
        fail(DSCC_SHAPE_MISMATCH, "@" + entry_ + ": input " + std::to_string(i) + " (%" + s.name + ") has rank " +
                                      std::to_string(a.ndim()) + ", expected " + std::to_string(s.rank) + " (" +
                                      s.type + ")");
      if (!(a.flags() & py::array::c_style)) a = py::array::ensure(a, py::array::c_style);  // a copy
      held.push_back(a);
      inDims[i].assign(a.shape(), a.shape() + a.ndim());
      in[i].data = const_cast<void*>(a.data());
      in[i].dims = inDims[i].data();
      in[i].rank = static_cast<int32_t>(a.ndim());
      in[i].dtype = s.dtype;
    }
    if (into && into->size() != outputs_.size())
      fail(DSCC_INVALID_ARGUMENT, "@" + entry_ + " has " + std::to_string(outputs_.size()) + " outputs, got " +
                                      std::to_string(into->size()) + " arrays to write them into");
    std::vector<std::vector<int64_t>>& outDims = p.outDims;
    std::vector<dscc_tensor>& out = p.out;
    outDims.resize(outputs_.size());
    out.resize(outputs_.size());
    for (size_t i = 0; i < outputs_.size(); ++i) {
      outDims[i].assign(std::max(outputs_[i].rank, 1), 0);
      out[i].data = nullptr;
      if (into) {
        const py::array& a = (*into)[i];
        const TensorSpec& s = outputs_[i];
        if (!a.dtype().equal(numpyDtype(s.dtype)) || a.ndim() != s.rank)
          fail(DSCC_SHAPE_MISMATCH, "@" + entry_ + ": output " + std::to_string(i) + " (%" + s.name + ") is " +
                                        s.type + "; the array given has dtype " + std::string(py::str(a.dtype())) +
                                        " and rank " + std::to_string(a.ndim()));
        if (!(a.flags() & py::array::c_style) || !a.writeable())
          fail(DSCC_INVALID_ARGUMENT, "@" + entry_ + ": the array for output " + std::to_string(i) + " (%" + s.name +
                                          ") must be C-contiguous and writable");
        std::copy(a.shape(), a.shape() + a.ndim(), outDims[i].begin());
        out[i].data = const_cast<void*>(a.data());
        held.push_back(a);
      }
      out[i].dims = outDims[i].data();
      out[i].rank = outputs_[i].rank;
      out[i].dtype = outputs_[i].dtype;
    }
    return p;
  }

  /// Runs prepared tensors in `ctx` with the GIL released; raises on a non-OK status.
  void run(Prepared& p, Context& ctx) const {
    dscc_status st;
    std::string msg;
    {
      py::gil_scoped_release unlocked;
      st = run_(ctx.get(), p.in.data(), static_cast<int>(p.in.size()), p.out.data(), static_cast<int>(p.out.size()));
      if (st != DSCC_OK) msg = dscc_status_message(ctx.get());  // thread-local: read on this thread
    }
    if (st != DSCC_OK) fail(st, msg.empty() ? std::string("@") + entry_ + " failed: " + dscc_status_name(st) : msg);
  }

  /// Runs the model on `args` (one array per input, in order) in `ctx`;
  /// returns the outputs, which own their runtime-allocated memory (no
  /// copy), or, given `into` (one writable C-contiguous array per output, of
  /// the exact shape), writes into those and returns them.
  std::vector<py::array> call(const std::vector<py::array>& args, Context& ctx,
                              const std::optional<std::vector<py::array>>& into) const {
    Prepared p = prepare(args, into);
    run(p, ctx);
    std::vector<dscc_tensor>& out = p.out;
    std::vector<std::vector<int64_t>>& outDims = p.outDims;
    if (into) return *into;
    std::vector<py::array> results;
    for (size_t i = 0; i < out.size(); ++i) {
      void* data = out[i].data;
      py::capsule owner(data, [](void* p) { dscc_free(nullptr, p); });
      std::vector<py::ssize_t> shape(outDims[i].begin(), outDims[i].begin() + out[i].rank);
      // C-order strides from dscc's own element sizes: pybind11 2.10 reads
      // the itemsize out of NumPy's dtype struct, whose layout NumPy 2
      // changed, and got 0 there (every stride 0: each output read as its
      // first element repeated, under NumPy 2 only).
      py::dtype dt = numpyDtype(out[i].dtype);
      std::vector<py::ssize_t> strides(shape.size());
      py::ssize_t step = static_cast<py::ssize_t>(elementBytes(out[i].dtype));
      for (size_t d = shape.size(); d-- > 0;) {
        strides[d] = step;
        step *= shape[d];
      }
      results.push_back(py::array(dt, shape, strides, data, owner));
    }
    return results;
  }

 private:
  void readSignature() {
    dscc::SourceMgr sm;
    std::ostringstream diagText;
    dscc::DiagEngine diags(sm, diagText);
    int id = sm.addBuffer(path_ + ":dscc_model_source", source_);
    auto m = dscc::parseModule(sm, id, diags);
    const dscc::Function* f = m ? m->lookup(entry_) : nullptr;
    if (!f) fail(DSCC_INTERNAL, "cannot read the signature of '" + path_ + "': " + diagText.str());
    auto spec = [](const std::string& name, const dscc::Type& t) {
      TensorSpec s;
      s.name = name;
      s.type = t.str();
      s.dtype = static_cast<dscc_dtype>(t.dtype);
      s.rank = static_cast<int>(t.rank());
      for (const auto& d : t.dims) s.dims.push_back(d.str());
      return s;
    };
    for (const auto& a : f->args) inputs_.push_back(spec(a->name, a->type));
    for (size_t i = 0; i < f->returns.size(); ++i) {
      // The result's own name (an ONNX output name) where it has one, else the returned value's.
      std::string name = f->resultName(i).empty() ? f->returns[i]->name : f->resultName(i);
      for (size_t j = 0; j < i; ++j)
        if (outputs_[j].name == name) name = "out" + std::to_string(i);  // a value returned twice
      outputs_.push_back(spec(name, f->returns[i]->type));
    }
  }

  std::string path_, entry_, target_, source_;
  void* handle_ = nullptr;
  dscc_run_fn run_ = nullptr;
  std::vector<TensorSpec> inputs_, outputs_;
};

/// A call prepared once and run many times (as ONNX Runtime's IOBinding): the
/// inputs and the caller's output arrays are checked and wrapped when it is
/// made, so a call costs the model's time and little else (benchmarks of
/// microsecond kernels). It keeps its model, context and arrays alive.
class BoundCall {
 public:
  BoundCall(const Model& m, const std::vector<py::array>& args, Context& ctx, const std::vector<py::array>& into)
      : m_(m), ctx_(ctx), p_(m.prepare(args, into)) {}
  /// Runs the model, writing the bound output arrays; raises on failure.
  void operator()() { m_.run(p_, ctx_); }

 private:
  const Model& m_;
  Context& ctx_;
  Model::Prepared p_;
};

PyObject* newError(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  std::string full = std::string("dscc.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(full.c_str(), doc, bases, nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;
}

// `dscc compile ARGS...` in this process (the command line's own code: the same options, checks and compile
// session); returns (exit status, what it wrote to stdout, what it wrote to stderr). The command reports through
// std::cout and std::cerr, which are redirected for its duration, so one compile runs at a time; the GIL is
// released meanwhile (model calls on other threads go on).
py::tuple compileCommand(const std::vector<std::string>& args) {
  static std::mutex one;
  std::ostringstream out, err;
  int rc = 1;
  {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(one);
    std::streambuf* oldOut = std::cout.rdbuf(out.rdbuf());
    std::streambuf* oldErr = std::cerr.rdbuf(err.rdbuf());
    try {
      rc = dscc::tools::runCompileCommand(args);
    } catch (const std::exception& e) {
      err << "dscc: error: " << e.what() << "\n";
    }
    std::cout.rdbuf(oldOut);
    std::cerr.rdbuf(oldErr);
  }
  return py::make_tuple(rc, py::bytes(out.str()), py::bytes(err.str()));
}

}  // namespace

PYBIND11_MODULE(_dscc, m) {
  m.doc() = "dscc compiled models called with NumPy arrays (the C++ half of the dscc package)";
  PyObject* base = newError(m, "Error", PyExc_RuntimeError, "A dscc runtime call failed; .status is the dscc_status.");
  auto two = [&](PyObject* b) { return PyTuple_Pack(2, base, b); };
  gErrors[0] = base;
  gErrors[DSCC_INVALID_ARGUMENT] = newError(m, "InvalidArgumentError", two(PyExc_ValueError), "DSCC_INVALID_ARGUMENT");
  gErrors[DSCC_SHAPE_MISMATCH] =
      newError(m, "ShapeMismatchError", two(PyExc_ValueError), "DSCC_SHAPE_MISMATCH: a dtype, rank or dim differs");
  gErrors[DSCC_FACT_VIOLATED] =
      newError(m, "FactViolatedError", two(PyExc_ValueError), "DSCC_FACT_VIOLATED: sizes break a fact of the model");
  gErrors[DSCC_OUT_OF_MEMORY] = newError(m, "OutOfMemoryError", two(PyExc_MemoryError), "DSCC_OUT_OF_MEMORY");
  gErrors[DSCC_INTERNAL] = newError(m, "InternalError", base, "DSCC_INTERNAL: a bug in dscc or a library it calls");
  gErrors[DSCC_UNAVAILABLE] = newError(m, "UnavailableError", base, "DSCC_UNAVAILABLE: no GPU, or a missing library");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      PyObject* cls = e.status > 0 && e.status < 7 ? gErrors[e.status] : gErrors[0];
      py::object exc = py::reinterpret_steal<py::object>(PyObject_CallFunction(cls, "s", e.message.c_str()));
      if (!exc) return;
      PyObject_SetAttrString(exc.ptr(), "status", py::int_(static_cast<int>(e.status)).ptr());
      PyObject_SetAttrString(exc.ptr(), "status_name", py::str(dscc_status_name(e.status)).ptr());
      PyErr_SetObject(cls, exc.ptr());
    }
  });

  py::class_<Context>(m, "Context", "A runtime context: the threads its calls use (docs/abi.md).")
      .def(py::init<int>(), py::arg("threads") = 0,
           "threads in all, the caller included; 0: one per hardware thread; 1: the caller alone")
      .def_property_readonly("threads", &Context::threads)
      .def_property("profiling", &Context::profiling, &Context::setProfiling,
                    "record every kernel launch and library call (off by default; docs/view.md)")
      .def("profile", &Context::profile,
           "the records so far: dicts of name, kind, version, function, call, sizes, units, bytes, flops, thread, "
           "start_ns, end_ns")
      .def("clear_profile", &Context::clearProfile, "drop the records (no call may be in flight)");

  py::class_<TensorSpec>(m, "TensorSpec", "An input or output as the program declares it.")
      .def_readonly("name", &TensorSpec::name)
      .def_readonly("type", &TensorSpec::type)
      .def_readonly("rank", &TensorSpec::rank)
      .def_readonly("dims", &TensorSpec::dims)
      .def_property_readonly("dtype", [](const TensorSpec& s) { return numpyDtype(s.dtype); })
      .def_property_readonly("dtype_name", [](const TensorSpec& s) { return std::string(dscc_dtype_name(s.dtype)); })
      .def("__repr__", [](const TensorSpec& s) { return "TensorSpec(%" + s.name + ": " + s.type + ")"; });

  py::class_<Model>(m, "Model", "A compiled model (.so from `dscc compile`), loaded.")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def_property_readonly("inputs", &Model::inputs)
      .def_property_readonly("outputs", &Model::outputs)
      .def_property_readonly("entry", &Model::entry)
      .def_property_readonly("target", &Model::target)
      .def_property_readonly("source", &Model::source)
      .def_property_readonly("path", &Model::path)
      .def("call", &Model::call, py::arg("inputs"), py::arg("context"), py::arg("into") = py::none(),
           "runs the model on one array per input, in order; returns the outputs in order (written into `into`, "
           "one array per output, when given)");

  py::class_<BoundCall>(m, "BoundCall", "A call on fixed arrays, prepared once (Model.bind).")
      .def(py::init<const Model&, const std::vector<py::array>&, Context&, const std::vector<py::array>&>(),
           py::arg("model"), py::arg("inputs"), py::arg("context"), py::arg("into"), py::keep_alive<1, 2>(),
           py::keep_alive<1, 4>())
      .def("__call__", &BoundCall::operator(), "runs the model into the bound output arrays");

  m.def("compile_command", &compileCommand, py::arg("args"),
        "`dscc compile ARGS...` in this process; returns (exit status, stdout bytes, stderr bytes)");

  m.attr("abi_version") = dscc_abi_version();
}
