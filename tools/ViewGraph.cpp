// `dscc view`'s layouts: the program as a Graphviz graph (libcgraph), laid out by dot and rendered to SVG (libgvc).
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tools/View.h"

namespace dscc::tools {
namespace {

// A kernel's fill: by kind, or by its share of the time when there is a
// profile (white to red, so the slow ones stand out).
std::string kernelColor(const ViewModel& v, const KernelExplain& k) {
  if (!v.times.empty()) {
    double s = std::clamp(timeShare(v, k.symbol), 0.0, 1.0);
    // Scaled so that a kernel with a quarter of the time is already deep red.
    double t = std::min(1.0, s * 4);
    char buf[16];
    std::snprintf(buf, sizeof buf, "#ff%02x%02x", int(255 - 200 * t), int(255 - 200 * t));
    return buf;
  }
  switch (k.kind) {
    case KernelKind::Library: return "#dbe9ff";
    case KernelKind::Stitch: return "#e6f5d0";
    case KernelKind::Input: return "#fff2cc";
    case KernelKind::Generic: return "#f2e0f5";
    case KernelKind::Loop: break;
  }
  return "#eeeeee";
}

// The version that runs, for labels: from explain's answer.
std::string runsVersion(const KernelExplain& k) {
  if (k.runs.empty()) return "";
  std::string prefix = k.symbol + ".";
  return k.runs.rfind(prefix, 0) == 0 ? k.runs.substr(prefix.size()) : k.runs;
}

std::string kernelLabel(const ViewModel& v, const KernelExplain& k, bool collapsed) {
  std::ostringstream l;
  l << k.symbol << "  " << kernelKindName(k.kind);
  if (collapsed) {
    l << "\n%" << k.result << " : " << k.type;
    std::string ops = k.ops.size() > 60 ? k.ops.substr(0, 57) + "..." : k.ops;
    l << "\n(" << ops << ")";
  }
  if (!k.blas.empty()) l << "\nBLAS " << k.blas;
  if (!k.hasKernel) {
    // only the BLAS runs
  } else if (!k.runs.empty()) {
    l << "\nruns " << runsVersion(k);
  } else if (!k.versions.empty()) {
    std::string vs;
    for (const std::string& s : k.versions) vs += (vs.empty() ? "" : " | ") + s;
    l << "\nversions " << vs;
  }
  if (!v.times.empty()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * timeShare(v, k.symbol));
    l << "\ntime " << buf;
  }
  return l.str();
}

// Graphviz takes char*, not const char*. In labels a backslash starts an
// escape (\n, \l, \N), so one in a name is doubled and a line break is \n.
void set(void* obj, const char* attr, const std::string& value) {
  std::string v;
  if (std::string(attr) == "label") {
    for (char c : value) v += c == '\n' ? std::string("\\n") : c == '\\' ? std::string("\\\\") : std::string(1, c);
  } else {
    v = value;
  }
  agsafeset(obj, const_cast<char*>(attr), const_cast<char*>(v.c_str()), const_cast<char*>(""));
}

// The layer a kernel belongs to, from its result's name as exporters spell
// it (`layers.3.attn...`, `_layers_3_attn_...`, `h.3.mlp`, `blocks_3`): "layers 3"; "" when none.
std::string layerOf(const std::string& result) {
  static const std::regex re(R"((?:^|[._/])(layers?|blocks?|h|encoder_layer|decoder_layer)[._/](\d+)(?:[._/]|$))");
  std::smatch m;
  if (!std::regex_search(result, m, re)) return "";
  return m[1].str() + " " + m[2].str();
}

// Object IDs by order of first use. cgraph's default discipline makes a
// named object's ID its interned string's address, and orders subgraphs by
// ID, so clusters were laid out in an order that changed from run to run;
// with these IDs the SVG is a function of the program alone.
struct SequentialIds {
  std::deque<std::string> names;  // the name of ID 2 * (i + 1); a deque, so c_str() stays valid
  std::map<std::string, IDTYPE> ids;
  IDTYPE nextAnonymous = 1;       // anonymous objects take odd IDs, as in cgraph's own discipline

  static void* open(Agraph_t*, Agdisc_t*) { return new SequentialIds; }
  static long map(void* state, int, char* str, IDTYPE* id, int create) {
    auto* s = static_cast<SequentialIds*>(state);
    if (!str) {
      *id = s->nextAnonymous;
      s->nextAnonymous += 2;
      return 1;
    }
    auto it = s->ids.find(str);
    if (it == s->ids.end()) {
      if (!create) return 0;
      s->names.emplace_back(str);
      it = s->ids.emplace(str, IDTYPE(2 * s->names.size())).first;
    }
    *id = it->second;
    return 1;
  }
  static long alloc(void*, int, IDTYPE) { return 0; }
  static void free(void*, int, IDTYPE) {}
  static char* print(void* state, int, IDTYPE id) {
    auto* s = static_cast<SequentialIds*>(state);
    if (id % 2 != 0 || id == 0 || id / 2 > s->names.size()) return nullptr;
    return const_cast<char*>(s->names[id / 2 - 1].c_str());
  }
  static void close(void* state) { delete static_cast<SequentialIds*>(state); }
  static void idregister(void*, int, void*) {}
};

Agiddisc_t kSequentialIdDisc = {SequentialIds::open,  SequentialIds::map,   SequentialIds::alloc,
                                SequentialIds::free,  SequentialIds::print, SequentialIds::close,
                                SequentialIds::idregister};
Agdisc_t kDisc = {&AgMemDisc, &kSequentialIdDisc, &AgIoDisc};

class Builder {
 public:
  Builder(const ViewModel& v, bool collapsed) : v_(v), collapsed_(collapsed) {
    g_ = agopen(const_cast<char*>("dscc"), Agdirected, &kDisc);
    set(g_, "rankdir", "TB");
    set(g_, "fontname", "Helvetica");
    set(g_, "nodesep", "0.25");
    set(g_, "ranksep", "0.35");
    agattr(g_, AGNODE, const_cast<char*>("fontname"), const_cast<char*>("Helvetica"));
    agattr(g_, AGNODE, const_cast<char*>("fontsize"), const_cast<char*>("10"));
    agattr(g_, AGNODE, const_cast<char*>("shape"), const_cast<char*>("box"));
    agattr(g_, AGNODE, const_cast<char*>("style"), const_cast<char*>("rounded,filled"));
    agattr(g_, AGNODE, const_cast<char*>("fillcolor"), const_cast<char*>("white"));
    agattr(g_, AGEDGE, const_cast<char*>("arrowsize"), const_cast<char*>("0.6"));
    agattr(g_, AGEDGE, const_cast<char*>("color"), const_cast<char*>("#555555"));
  }
  ~Builder() { agclose(g_); }
  Agraph_t* graph() { return g_; }

  void build() {
    const Function& f = *v_.fe->func;
    // The kernel view groups the kernels of a layer in a cluster when the
    // names say there are layers (at least two), so a deep model reads as
    // a stack of layers.
    if (collapsed_) {
      std::set<std::string> layers;
      for (const KernelExplain& k : v_.kernels)
        if (std::string l = layerOf(k.result); !l.empty()) layers.insert(l);
      if (layers.size() >= 2)
        for (const KernelExplain& k : v_.kernels) layer_.push_back(layerOf(k.result));
    }
    std::map<const Operation*, size_t> kernelOf;
    for (size_t i = 0; i < v_.fe->plan.kernels.size(); ++i) kernelOf[v_.fe->plan.kernels[i].fusion] = i;
    for (size_t i = 0; i < f.args.size(); ++i) {
      const Value& a = *f.args[i];
      Agnode_t* n = node("arg" + std::to_string(i), "%" + a.name + "\n" + a.type.str(), "arg");
      set(n, "shape", "ellipse");
      set(n, "fillcolor", "#ffffff");
      producer_[&a] = n;
    }
    size_t opId = 0;
    for (const auto& op : f.ops) {
      auto k = kernelOf.find(op.get());
      if (k != kernelOf.end()) {
        addKernel(*op, v_.kernels.at(k->second), opId);
        continue;
      }
      ++opId;
      if (op->kind == OpKind::Constant && collapsed_) continue;  // weights would crowd the kernels out
      const Value* r = op->results.empty() ? nullptr : op->result();
      std::string label = std::string(op->name()) + (r ? "\n%" + r->name + " : " + r->type.str() : "");
      Agnode_t* n = node("op" + std::to_string(opId), label, "op");
      if (op->kind == OpKind::Constant) {
        set(n, "shape", "note");
        set(n, "fontsize", "8");
      }
      edgesInto(*op, n);
      for (const auto& res : op->results) producer_[res.get()] = n;
    }
    Agnode_t* ret = node("return", "return", "ret");
    set(ret, "shape", "ellipse");
    for (const Value* r : f.returns) edge(r, ret);
  }

 private:
  Agnode_t* node(const std::string& id, const std::string& label, const std::string& cls, Agraph_t* in = nullptr) {
    Agnode_t* n = agnode(in ? in : g_, const_cast<char*>(id.c_str()), 1);
    set(n, "label", label);
    set(n, "id", id);
    set(n, "class", cls);
    return n;
  }

  void edge(const Value* from, Agnode_t* to) {
    auto it = producer_.find(from);
    if (it == producer_.end() || it->second == to) return;
    std::string key = std::string(agnameof(it->second)) + "->" + agnameof(to);
    if (!edges_.insert(key).second) return;  // one edge per pair of nodes
    Agedge_t* e = agedge(g_, it->second, to, nullptr, 1);
    set(e, "tooltip", "%" + from->name + " : " + from->type.str());
  }

  void edgesInto(const Operation& op, Agnode_t* n) {
    for (const Value* o : op.operands) edge(o, n);
  }

  void addKernel(const Operation& fusion, const KernelExplain& k, size_t& opId) {
    std::string cls = "kernel dk-" + std::to_string(k.index);
    if (collapsed_) {
      ++opId;
      opId += fusion.body.size();
      Agraph_t* in = nullptr;
      if (k.index < layer_.size() && !layer_[k.index].empty()) {
        std::string name = layer_[k.index];
        std::string cluster = "cluster_layer_" + std::to_string(layerIds_.emplace(name, layerIds_.size()).first->second);
        in = agsubg(g_, const_cast<char*>(cluster.c_str()), 1);
        set(in, "label", name);
        set(in, "class", "layer");
        set(in, "style", "dashed,rounded");
        set(in, "fontsize", "12");
        set(in, "labeljust", "l");
      }
      Agnode_t* n = node("kernel" + std::to_string(k.index), kernelLabel(v_, k, true), cls, in);
      set(n, "fillcolor", kernelColor(v_, k));
      set(n, "tooltip", k.symbol);
      edgesInto(fusion, n);
      for (const auto& r : fusion.results) producer_[r.get()] = n;
      return;
    }
    ++opId;
    std::string cluster = "cluster_k" + std::to_string(k.index);
    Agraph_t* sub = agsubg(g_, const_cast<char*>(cluster.c_str()), 1);
    set(sub, "label", kernelLabel(v_, k, false));
    set(sub, "id", "kernel" + std::to_string(k.index));
    set(sub, "class", cls);
    set(sub, "style", "filled,rounded");
    set(sub, "fillcolor", kernelColor(v_, k));
    set(sub, "fontsize", "10");
    set(sub, "labeljust", "l");
    for (const auto& op : fusion.body) {
      ++opId;
      const Value* r = op->results.empty() ? nullptr : op->result();
      std::string label = std::string(op->name()) + (r ? "\n%" + r->name + " : " + r->type.str() : "");
      Agnode_t* n = node("op" + std::to_string(opId), label, "op dk-" + std::to_string(k.index), sub);
      edgesInto(*op, n);
      for (const auto& res : op->results) producer_[res.get()] = n;
    }
    // The fusion's results are the values it yields.
    for (size_t i = 0; i < fusion.results.size() && i < fusion.yields.size(); ++i) {
      auto it = producer_.find(fusion.yields[i]);
      if (it != producer_.end()) producer_[fusion.result(i)] = it->second;
    }
  }

  const ViewModel& v_;
  bool collapsed_;
  Agraph_t* g_ = nullptr;
  std::map<const Value*, Agnode_t*> producer_;  // lookups only: nothing is emitted in pointer order
  std::set<std::string> edges_;
  std::vector<std::string> layer_;             // per kernel: its layer, when the kernel view groups them
  std::map<std::string, size_t> layerIds_;     // layer name -> cluster number, in order of first kernel
};

}  // namespace

double timeShare(const ViewModel& v, const std::string& symbol) {
  auto it = v.times.find(symbol);
  if (it == v.times.end() || v.profileTotalNs <= 0) return 0;
  return double(it->second.ns) / double(v.profileTotalNs);
}

std::string layoutSvg(const ViewModel& v, bool collapsed, std::string& err) {
  // One Graphviz context for the whole process, never freed: Graphviz 2.42's
  // pango plugin keeps a pointer to the last font name it measured, which
  // lives in the context's font table, so a second context made after
  // gvFreeContext compared against freed memory (ASan, `dscc view`, which
  // lays out the collapsed and the full graph).
  static GVC_t* gvc = gvContext();
  if (!gvc) {
    err = "cannot start Graphviz (gvContext failed)";
    return "";
  }
  std::string svg;
  {
    Builder b(v, collapsed);
    b.build();
    if (gvLayout(gvc, b.graph(), "dot") != 0) {
      err = "Graphviz could not lay the graph out with dot (are Graphviz's plugins installed? Debian: graphviz)";
    } else {
      char* data = nullptr;
      unsigned int len = 0;
      if (gvRenderData(gvc, b.graph(), "svg", &data, &len) != 0 || !data) err = "Graphviz could not render SVG";
      else svg.assign(data, len);
      if (data) gvFreeRenderData(data);
      gvFreeLayout(gvc, b.graph());
    }
  }
  return svg;
}

}  // namespace dscc::tools
