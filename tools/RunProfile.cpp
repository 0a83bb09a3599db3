// The profile of a compiled model's run: per-kernel table, Chrome trace JSON and the prof.json `dscc view --profile` reads.
#include "tools/RunProfile.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <vector>

#include "ir/Parser.h"
#include "tools/Json.h"

namespace dscc::tools {
namespace {

const char* callName(int32_t c) {
  return c == DSCC_PROFILE_GEMM ? "gemm" : c == DSCC_PROFILE_COPY ? "copy" : c == DSCC_PROFILE_WINDOW ? "window" : "kernel";
}

// Bytes a kernel launch moved: its bytes_expr at its sizes; 0 when unknown.
double launchBytes(const dscc_profile_record& r) {
  if (r.call != DSCC_PROFILE_KERNEL) return r.bytes;
  if (!r.bytes_expr || !*r.bytes_expr) return 0;
  std::string err;
  auto e = parseDimExpr(r.bytes_expr, &err);
  if (!e) return 0;
  DimBindings env;
  for (int32_t i = 0; i < r.n_sizes; ++i) env[r.size_names[i]] = r.sizes[i];
  auto v = e->evaluate(env, &err);
  return v ? double(*v) : 0;
}

// One row of the table: every call of one function (or library call) of one kernel.
struct Row {
  std::string name, kind, version, function, call;
  int64_t calls = 0, totalNs = 0;
  double bytes = 0, flops = 0;
};

std::vector<dscc_profile_record> readRecords(const dscc_context* ctx) {
  std::vector<dscc_profile_record> rs(static_cast<size_t>(dscc_profile_count(ctx)));
  for (size_t i = 0; i < rs.size(); ++i) dscc_profile_get(ctx, int64_t(i), &rs[i]);
  return rs;
}

// Rows in the order their first call ended: the model's kernel order.
std::vector<Row> tabulate(const std::vector<dscc_profile_record>& rs) {
  std::vector<Row> rows;
  std::map<std::string, size_t> at;
  for (const dscc_profile_record& r : rs) {
    std::string key = std::string(r.name) + '\0' + r.function + '\0' + r.version + '\0' + callName(r.call);
    auto [it, fresh] = at.emplace(key, rows.size());
    if (fresh) rows.push_back({r.name, r.kind, r.version, r.function, callName(r.call)});
    Row& row = rows[it->second];
    ++row.calls;
    row.totalNs += r.end_ns - r.start_ns;
    row.bytes += launchBytes(r);
    row.flops += r.flops;
  }
  return rows;
}

void printTable(const std::vector<Row>& rows, std::ostream& out) {
  int64_t total = 0;
  for (const Row& r : rows) total += r.totalNs;
  size_t w = 6;
  for (const Row& r : rows) w = std::max(w, r.name.size());
  out << "profile: " << rows.size() << " kernel versions and library calls, " << std::fixed << std::setprecision(3)
      << total / 1e6 << " ms in all\n";
  out << std::left << std::setw(int(w) + 2) << "kernel" << std::setw(9) << "kind" << std::setw(16) << "version"
      << std::right << std::setw(7) << "calls" << std::setw(12) << "total ms" << std::setw(12) << "mean us"
      << std::setw(8) << "share" << std::setw(10) << "GB/s" << std::setw(10) << "GFLOP/s" << "\n";
  for (const Row& r : rows) {
    double secs = r.totalNs / 1e9;
    auto rate = [&](double x) {
      std::ostringstream s;
      if (x > 0 && secs > 0) s << std::fixed << std::setprecision(2) << x / secs / 1e9;
      else s << "-";
      return s.str();
    };
    std::ostringstream share;
    share << std::fixed << std::setprecision(1) << (total > 0 ? 100.0 * r.totalNs / total : 0) << "%";
    out << std::left << std::setw(int(w) + 2) << r.name << std::setw(9) << r.kind << std::setw(16) << r.version
        << std::right << std::setw(7) << r.calls << std::setw(12) << std::setprecision(3) << r.totalNs / 1e6
        << std::setw(12) << std::setprecision(1) << r.totalNs / 1e3 / double(r.calls) << std::setw(8)
        << share.str() << std::setw(10) << rate(r.bytes) << std::setw(10) << rate(r.flops) << "\n";
  }
  out << std::defaultfloat << std::setprecision(6);
}

std::string traceJson(const std::vector<dscc_profile_record>& rs, const std::string& model) {
  int64_t t0 = 0;
  for (size_t i = 0; i < rs.size(); ++i)
    if (i == 0 || rs[i].start_ns < t0) t0 = rs[i].start_ns;
  std::ostringstream j;
  j << "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"model\": " << jsonString(model) << "},\n\"traceEvents\": [";
  std::map<uint32_t, bool> threads;
  for (const dscc_profile_record& r : rs) threads[r.thread] = true;
  bool first = true;
  for (const auto& [t, _] : threads) {
    j << (first ? "\n" : ",\n") << "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": " << t
      << ", \"args\": {\"name\": \"caller " << t << "\"}}";
    first = false;
  }
  for (const dscc_profile_record& r : rs) {
    j << (first ? "\n" : ",\n") << "{\"name\": " << jsonString(r.function && *r.function ? r.function : r.name)
      << ", \"cat\": " << jsonString(callName(r.call)) << ", \"ph\": \"X\", \"ts\": " << jsonNumber((r.start_ns - t0) / 1e3)
      << ", \"dur\": " << jsonNumber((r.end_ns - r.start_ns) / 1e3) << ", \"pid\": 1, \"tid\": " << r.thread
      << ", \"args\": {\"kernel\": " << jsonString(r.name) << ", \"kind\": " << jsonString(r.kind)
      << ", \"version\": " << jsonString(r.version) << ", \"function\": " << jsonString(r.function)
      << ", \"thread\": " << r.thread << ", \"sizes\": {";
    for (int32_t i = 0; i < r.n_sizes; ++i) j << (i ? ", " : "") << jsonString(r.size_names[i]) << ": " << r.sizes[i];
    j << "}";
    if (r.call == DSCC_PROFILE_KERNEL) j << ", \"units\": " << r.units;
    if (double b = launchBytes(r); b > 0) j << ", \"bytes\": " << jsonNumber(b);
    if (r.flops > 0) j << ", \"flops\": " << jsonNumber(r.flops);
    j << "}}";
    first = false;
  }
  j << "\n]}\n";
  return j.str();
}

std::string profileJson(const std::vector<Row>& rows, const std::string& model) {
  int64_t total = 0;
  for (const Row& r : rows) total += r.totalNs;
  std::ostringstream j;
  j << "{\"dscc_profile\": 1, \"model\": " << jsonString(model) << ", \"total_ns\": " << total << ",\n\"kernels\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    j << (i ? ",\n" : "\n") << "{\"name\": " << jsonString(r.name) << ", \"kind\": " << jsonString(r.kind)
      << ", \"version\": " << jsonString(r.version) << ", \"function\": " << jsonString(r.function)
      << ", \"call\": " << jsonString(r.call) << ", \"calls\": " << r.calls << ", \"total_ns\": " << r.totalNs
      << ", \"bytes\": " << jsonNumber(r.bytes) << ", \"flops\": " << jsonNumber(r.flops) << "}";
  }
  j << "\n]}\n";
  return j.str();
}

bool writeFile(const std::string& path, const std::string& text, const char* flag, std::ostream& err) {
  std::ofstream f(path, std::ios::binary);
  if (f) f << text;
  if (!f || !f.flush()) {
    err << "dscc: error: " << flag << " " << path << ": cannot write: " << std::strerror(errno) << "\n";
    return false;
  }
  return true;
}

}  // namespace

void addProfileOptions(CLI::App* run, ProfileOpts& o) {
  run->add_flag("--profile", o.table,
                "compiled models: record every kernel launch and library call (the runtime's profiling) and print a "
                "table per kernel after the run: calls, total and mean time, share, GB/s, GFLOP/s; with --bench, of the "
                "timed calls only (docs/view.md)");
  run->add_option("--trace", o.trace,
                  "compiled models: write the launches and library calls as a Chrome trace / Perfetto JSON file");
  run->add_option("--profile-out", o.out,
                  "compiled models: write the per-kernel totals as JSON, for `dscc view --profile FILE`");
}

bool reportProfile(const dscc_context* ctx, const ProfileOpts& o, const std::string& model, std::ostream& out,
                   std::ostream& err) {
  std::vector<dscc_profile_record> rs = readRecords(ctx);
  std::vector<Row> rows = tabulate(rs);
  if (o.table) printTable(rows, out);
  if (!o.trace.empty() && !writeFile(o.trace, traceJson(rs, model), "--trace", err)) return false;
  if (!o.out.empty() && !writeFile(o.out, profileJson(rows, model), "--profile-out", err)) return false;
  return true;
}

}  // namespace dscc::tools
