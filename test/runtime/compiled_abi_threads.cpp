// Concurrent calls of one compiled model on one shared context must each equal a sequential run, bit for bit.
//
// Built at test time by test/numeric/compiled_abi_test.py with
//   c++ -std=c++17 -DMODEL_RUN=NAME_run -I TMP (model.h) -I runtime/ ... model.so -ldscc_runtime -pthread
// Usage: compiled_abi_threads SYMS ARGS OUT
//   SYMS: sizes to draw, "B=1:3,S=1:24" (inclusive ranges)
//   ARGS: the f32 arguments' dims in order, ';'-separated, each ','-separated
//         symbols or integers ("B,S,768;B,S;768,768")
//   OUT:  the f32 result's dims ("B,S,768")
// Every (caller thread, call) pair draws its own sizes and data from a fixed
// seed. Pass 1 runs all calls one after another on the main thread; pass 2
// runs them from 4 threads at once on the same context (same thread count, so
// the same work split and the same rounding) and compares with memcmp.
// Arguments whose dims hold no symbol (weights) are shared by every call, as
// a served model's weights would be. Exit 0 when all results match.
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "model.h"

namespace {

constexpr int kCallers = 4;
constexpr int kCallsPerCaller = 50;
constexpr int kContextThreads = 3;

using Dims = std::vector<std::string>;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

struct Spec {
  std::map<std::string, std::pair<int64_t, int64_t>> syms;
  std::vector<Dims> args;
  Dims out;
};

bool hasSymbol(const Dims& d) {
  for (const auto& s : d)
    if (!std::isdigit(static_cast<unsigned char>(s[0]))) return true;
  return false;
}

std::vector<int64_t> resolve(const Dims& d, const std::map<std::string, int64_t>& env) {
  std::vector<int64_t> r;
  for (const auto& s : d) r.push_back(std::isdigit(static_cast<unsigned char>(s[0])) ? std::stoll(s) : env.at(s));
  return r;
}

int64_t numel(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (auto v : d) n *= v;
  return n;
}

// One call's sizes and its own (non-shared) input data.
struct Call {
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::vector<float>> data;  // empty for shared arguments
  std::vector<int64_t> outDims;
};

Call makeCall(const Spec& spec, int caller, int index) {
  std::mt19937_64 rng(uint64_t(caller) * 100003u + uint64_t(index) + 1);
  std::map<std::string, int64_t> env;
  for (const auto& [name, range] : spec.syms)
    env[name] = std::uniform_int_distribution<int64_t>(range.first, range.second)(rng);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Call c;
  for (const auto& a : spec.args) {
    c.dims.push_back(resolve(a, env));
    c.data.emplace_back();
    if (hasSymbol(a))
      for (int64_t k = 0; k < numel(c.dims.back()); ++k) c.data.back().push_back(u(rng));
  }
  c.outDims = resolve(spec.out, env);
  return c;
}

// Runs one call; on success `result` holds the output. Alternates caller- and
// runtime-allocated outputs so both paths run concurrently.
bool run(dscc_context* ctx, const Spec& spec, Call& c, std::vector<std::vector<float>>& shared, bool runtimeAlloc,
         std::vector<float>& result, std::string& err) {
  std::vector<dscc_tensor> in(spec.args.size());
  for (size_t k = 0; k < in.size(); ++k) {
    float* p = c.data[k].empty() ? shared[k].data() : c.data[k].data();
    in[k] = dscc_tensor{p, c.dims[k].data(), int32_t(c.dims[k].size()), DSCC_F32};
  }
  std::vector<int64_t> od = c.outDims;
  result.assign(size_t(numel(od)), -12345.0f);
  dscc_tensor out{runtimeAlloc ? nullptr : result.data(), od.data(), int32_t(od.size()), DSCC_F32};
  dscc_status s = MODEL_RUN(ctx, in.data(), int(in.size()), &out, 1);
  if (s != DSCC_OK) {
    err = std::string(dscc_status_name(s)) + ": " + dscc_status_message(ctx);
    return false;
  }
  if (runtimeAlloc) {
    if (od != c.outDims) {
      err = "runtime-allocated output has the wrong dims";
      dscc_tensor_free(&out);
      return false;
    }
    if (!result.empty()) std::memcpy(result.data(), out.data, result.size() * sizeof(float));
    dscc_tensor_free(&out);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s SYMS ARGS OUT\n", argv[0]);
    return 2;
  }
  Spec spec;
  for (const auto& s : split(argv[1], ',')) {
    auto eq = s.find('='), colon = s.find(':');
    spec.syms[s.substr(0, eq)] = {std::stoll(s.substr(eq + 1, colon - eq - 1)), std::stoll(s.substr(colon + 1))};
  }
  for (const auto& a : split(argv[2], ';')) spec.args.push_back(split(a, ','));
  spec.out = split(argv[3], ',');

  // Shared weights: one random copy for every call.
  std::mt19937_64 wrng(99);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::vector<float>> shared(spec.args.size());
  for (size_t k = 0; k < spec.args.size(); ++k)
    if (!hasSymbol(spec.args[k]))
      for (int64_t e = 0; e < numel(resolve(spec.args[k], {})); ++e) shared[k].push_back(u(wrng));

  dscc_context* ctx = dscc_context_create(kContextThreads);
  if (!ctx) {
    std::fprintf(stderr, "context: %s\n", dscc_status_message(nullptr));
    return 2;
  }
  std::vector<std::vector<std::vector<float>>> want(kCallers, std::vector<std::vector<float>>(kCallsPerCaller));
  for (int t = 0; t < kCallers; ++t)
    for (int i = 0; i < kCallsPerCaller; ++i) {
      Call c = makeCall(spec, t, i);
      std::string err;
      if (!run(ctx, spec, c, shared, false, want[t][i], err)) {
        std::fprintf(stderr, "sequential call (%d, %d) failed: %s\n", t, i, err.c_str());
        return 1;
      }
    }

  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::string> firstError(kCallers);
  std::vector<std::thread> threads;
  for (int t = 0; t < kCallers; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerCaller; ++i) {
        Call c = makeCall(spec, t, i);
        std::vector<float> got;
        std::string err;
        if (!run(ctx, spec, c, shared, (i + t) % 2 == 0, got, err)) {
          if (failures++ == 0) firstError[t] = err;
          continue;
        }
        if (got.size() != want[t][i].size() ||
            (!got.empty() && std::memcmp(got.data(), want[t][i].data(), got.size() * sizeof(float)) != 0)) {
          if (mismatches++ == 0) {
            std::string dims;
            for (auto d : c.outDims) dims += std::to_string(d) + " ";
            firstError[t] = "first mismatch at caller " + std::to_string(t) + " call " + std::to_string(i) +
                            " (output dims " + dims + ")";
          }
        }
      }
    });
  for (auto& th : threads) th.join();
  dscc_context_release(ctx);
  for (const auto& e : firstError)
    if (!e.empty()) std::fprintf(stderr, "%s\n", e.c_str());
  if (failures || mismatches) {
    std::fprintf(stderr, "FAIL: %d failed calls, %d results differing from the sequential run\n", failures.load(),
                 mismatches.load());
    return 1;
  }
  std::printf("%d callers x %d calls on one %d-thread context: all bit-identical to the sequential run\n",
              kCallers, kCallsPerCaller, kContextThreads);
  return 0;
}
