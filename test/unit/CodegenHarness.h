// The differential harness of CodegenTest: programs lowered kernel by kernel, JIT-run, compared with the interpreter.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/Jit.h"
#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "passes/DefaultPipeline.h"
#include "passes/Pipeline.h"

namespace dscc::codegentest {

/// What random inputs look like: nonzero everywhere (divisors), both signs or
/// positive only (log, pow exponents), small or wide integers (wrapping).
enum class Data { Mixed, Positive, Wide };

/// A program with its own sources and diagnostics.
struct Program {
  SourceMgr sm;
  std::ostringstream diagText;
  DiagEngine diags{sm, diagText};
  std::unique_ptr<Module> mod;
  Function* fn = nullptr;

  std::string errors() const {
    std::string all;
    for (const auto& d : diags.captured()) all += diags.format(d) + "\n";
    return all + diagText.str();
  }
};

/// `text` parsed and run through `passes` (none: as written); null after a reported failure.
std::unique_ptr<Program> parse(const std::string& text, const std::vector<const PassInfo*>& passes,
                               KernelTarget target = KernelTarget::Cpu);

/// `cm` verified and added to a new JIT; null, with a test failure, where either step fails.
std::unique_ptr<codegen::Jit> jitVerified(codegen::CodeModule cm);

/// `f` interpreted on fresh arguments of its types at `size`, each filled by `fill`: its results in `vals`, the
/// sizes it bound in `env`; false where the interpreter refuses (its reasons in `diags`).
bool interpretAt(Function& f, const DimBindings& size, const std::function<void(Tensor&)>& fill, DiagEngine& diags,
                 std::vector<Tensor>& vals, DimBindings& env);

/// The contents of the file `path`.
std::string readFile(const std::string& path);

/// The program of the random batch that test/numeric/random_programs.py --emulate names (DSCC_EMU_PROGRAM: its
/// path, read into `text`) and the sizes to run it at (DSCC_EMU_SIZES, "N=3,M=2;N=1,M=1"); false when either is
/// unset (the batch test is then skipped).
bool batchProgram(std::string& path, std::string& text, std::vector<DimBindings>& sizes);

/// Fills `t` for a GPU emulation test: floats non-zero in +-[0.05, 1] (with `nans`, every 13th one NaN); i64 ones
/// -1 or 0 (a random program's i64 arguments are gather indices, in range of any non-empty dim); other integers
/// in [0, 5).
void fillNonZero(Tensor& t, std::mt19937_64& rng, bool nans = false);

/// The loop kernels of `f`, in program order.
std::vector<const Operation*> loopKernels(const Function& f);

/// The value named `name` in `f` (an argument or an op's result).
Value* findValue(Function& f, const std::string& name);

/// Makes `f` return `vals` instead of its own results, so the interpreter
/// hands back values from inside the program.
void returnValues(Function& f, const std::vector<Value*>& vals);

/// A random tensor of `shape` and `dt`, values as `data` says.
Tensor randomTensor(DType dt, std::vector<int64_t> shape, Data data, std::mt19937_64& rng);

/// The first mismatch between `got` (raw bytes of want's dtype) and `want`, or "".
std::string compare(const uint8_t* got, const Tensor& want, bool exact);

/// `N=3 D=5`, for messages.
std::string sizesText(const DimBindings& env);

/// All combinations of the given values per symbol.
std::vector<DimBindings> grid(const std::map<std::string, std::vector<int64_t>>& axes);

/// N and D at 0, 1, odd sizes and either side of a 64-wide boundary.
std::vector<DimBindings> rowsByCols();

/// What a differential run saw, for coverage assertions.
struct Seen {
  std::set<OpKind> ops;
  std::set<DType> dtypes;
  int kernels = 0;
};

/// How checkProgram runs a program.
struct Options {
  Data data = Data::Mixed;
  Seen* seen = nullptr;  // records what the kernels contain
  std::vector<const PassInfo*> passes = defaultPipeline();
  // Sets chosen elements of the random inputs (edge values random data misses).
  std::function<void(std::vector<Tensor>&)> special = nullptr;
  // Floats must match bit for bit (conversions have one right answer).
  bool exact = false;
};

/// Lowers every loop kernel of `text` after the passes, runs each at `sizes`
/// and compares with the interpreter on the unfused program.
void checkProgram(const std::string& text, const std::vector<DimBindings>& sizes, const Options& o = {});

/// Replaces every `T` in `text` by `dtype`.
std::string withType(std::string text, const std::string& dtype);

}  // namespace dscc::codegentest
