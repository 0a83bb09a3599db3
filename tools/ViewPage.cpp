// `dscc view`'s page: one self-contained HTML file with the SVG layouts, the graph data as JSON, and a script for clicking, searching and collapsing.
#include <sstream>

#include "ir/Printer.h"
#include "tools/Json.h"
#include "tools/View.h"

namespace dscc::tools {
namespace {

std::string runsVersion(const KernelExplain& k) {
  std::string prefix = k.symbol + ".";
  return k.runs.rfind(prefix, 0) == 0 ? k.runs.substr(prefix.size()) : k.runs;
}

// Graphviz's SVG begins with an XML declaration and a DOCTYPE, which HTML does not take inline.
std::string inlineSvg(const std::string& svg) {
  size_t at = svg.find("<svg");
  return at == std::string::npos ? svg : svg.substr(at);
}

const char* kStyle = R"CSS(
body { margin: 0; font: 13px Helvetica, Arial, sans-serif; display: flex; height: 100vh; color: #222; }
#main { flex: 1; display: flex; flex-direction: column; min-width: 0; }
#bar { padding: 6px 8px; border-bottom: 1px solid #ccc; background: #f7f7f7; display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
#bar input { width: 16em; }
#graph { flex: 1; overflow: auto; background: #fff; }
#graph svg { display: block; }
#side { width: 34em; border-left: 1px solid #ccc; display: flex; flex-direction: column; min-height: 0; }
#kernels { list-style: none; margin: 0; padding: 0; overflow: auto; max-height: 40vh; border-bottom: 1px solid #ccc; }
#kernels li { padding: 2px 8px; cursor: pointer; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
#kernels li:hover { background: #eef; }
#kernels li.selected { background: #cde; }
#kernels li.hidden { display: none; }
#kernels .runs { color: #070; font-weight: bold; }
#details { padding: 8px; overflow: auto; flex: 1; }
#details pre { background: #f4f4f4; padding: 6px; overflow: auto; font-size: 11px; }
.versions span { margin-right: 6px; padding: 1px 4px; border: 1px solid #bbb; border-radius: 3px; }
.versions span.runs { background: #070; color: #fff; border-color: #070; }
g.hit > polygon, g.hit > path { stroke: #e00 !important; stroke-width: 3px; }
g.selected > polygon, g.selected > path { stroke: #00c !important; stroke-width: 3px; }
g.kernel, g.cluster { cursor: pointer; }
.muted { color: #777; }
)CSS";

const char* kScript = R"JS(
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('dscc-data').textContent);
  var list = document.getElementById('kernels');
  var details = document.getElementById('details');
  var views = { collapsed: document.getElementById('svg-collapsed'), detailed: document.getElementById('svg-detailed') };
  var scale = 1;
  var selected = -1;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function pct(x) { return (100 * x).toFixed(1) + '%'; }
  function graphNodes(i) {
    return document.querySelectorAll('#graph g.dk-' + i);
  }

  data.kernels.forEach(function (k) {
    var li = el('li');
    li.dataset.kernel = k.index;
    li.dataset.symbol = k.symbol;
    if (k.runs) li.dataset.runs = k.runs;
    li.appendChild(el('span', '', '[' + k.index + '] ' + k.symbol + '  ' + k.kind + '  '));
    if (k.runs) li.appendChild(el('span', 'runs', 'runs ' + k.runs_version));
    else if (!k.has_kernel) li.appendChild(el('span', 'muted', 'BLAS only'));
    if (data.profile) li.appendChild(el('span', 'muted', '  ' + pct(k.share)));
    li.title = '%' + k.result + ' : ' + k.type + '  (' + k.ops + ')';
    li.addEventListener('click', function () { show(k.index); });
    list.appendChild(li);
  });

  function show(i) {
    var k = data.kernels[i];
    selected = i;
    Array.prototype.forEach.call(list.children, function (li) {
      li.classList.toggle('selected', Number(li.dataset.kernel) === i);
    });
    Array.prototype.forEach.call(document.querySelectorAll('#graph g.selected'), function (g) {
      g.classList.remove('selected');
    });
    Array.prototype.forEach.call(graphNodes(i), function (g) { g.classList.add('selected'); });
    details.textContent = '';
    details.className = '';
    details.appendChild(el('h3', '', k.symbol + ' (' + k.kind + ')'));
    details.appendChild(el('div', '', '%' + k.result + ' : ' + k.type));
    if (k.blas) details.appendChild(el('div', '', 'BLAS ' + k.blas));
    var vs = el('div', 'versions', 'versions: ');
    k.versions.forEach(function (v) {
      vs.appendChild(el('span', k.runs_version === v ? 'runs' : '', v));
    });
    if (k.has_kernel) details.appendChild(vs);
    k.guards.forEach(function (g) {
      var state = g.proved ? 'proved from the facts' : g.holds === null ? 'run-time test' : 'run time: ' + g.holds;
      details.appendChild(el('div', '', 'guard ' + g.kind + ': ' + g.text + '  -- ' + state));
    });
    if (data.profile) {
      details.appendChild(el('div', '', 'time: ' + (k.time_ns / 1e6).toFixed(3) + ' ms, ' + pct(k.share) +
                                        ' of the profile (' + k.calls + ' calls)'));
    }
    details.appendChild(el('h4', '', 'explain'));
    details.appendChild(el('pre', 'explain', k.explain));
    details.appendChild(el('h4', '', 'IR'));
    details.appendChild(el('pre', 'ir', k.ir));
  }

  function kernelOf(target) {
    var g = target.closest ? target.closest('g') : null;
    while (g) {
      var m = /(?:^|\s)dk-(\d+)(?:\s|$)/.exec(g.getAttribute('class') || '');
      if (m) return Number(m[1]);
      g = g.parentNode && g.parentNode.closest ? g.parentNode.closest('g') : null;
    }
    return -1;
  }
  document.getElementById('graph').addEventListener('click', function (e) {
    var i = kernelOf(e.target);
    if (i >= 0) show(i);
  });

  document.getElementById('search').addEventListener('input', function (e) {
    var q = e.target.value.trim().toLowerCase();
    Array.prototype.forEach.call(document.querySelectorAll('#graph g.hit'), function (g) { g.classList.remove('hit'); });
    var hits = 0;
    data.kernels.forEach(function (k) {
      var text = (k.symbol + ' %' + k.result + ' ' + k.kind + ' ' + k.ops).toLowerCase();
      var hit = q === '' || text.indexOf(q) >= 0;
      list.children[k.index].classList.toggle('hidden', !hit);
      if (hit && q !== '') {
        hits++;
        Array.prototype.forEach.call(graphNodes(k.index), function (g) { g.classList.add('hit'); });
      }
    });
    document.getElementById('hits').textContent = q === '' ? '' : hits + ' kernels match';
  });

  function choose(which) {
    if (!views[which]) return;
    Object.keys(views).forEach(function (w) { if (views[w]) views[w].style.display = w === which ? '' : 'none'; });
    document.getElementById('mode').value = which;
    if (selected >= 0) show(selected);
  }
  document.getElementById('mode').addEventListener('change', function (e) { choose(e.target.value); });
  function zoom(f) {
    scale *= f;
    Array.prototype.forEach.call(document.querySelectorAll('#graph svg'), function (s) {
      if (!s.dataset.w) { s.dataset.w = s.getAttribute('width'); s.dataset.h = s.getAttribute('height'); }
      s.setAttribute('width', parseFloat(s.dataset.w) * scale + 'pt');
      s.setAttribute('height', parseFloat(s.dataset.h) * scale + 'pt');
    });
  }
  document.getElementById('zoom-in').addEventListener('click', function () { zoom(1.25); });
  document.getElementById('zoom-out').addEventListener('click', function () { zoom(0.8); });
  choose(data.kernels.length > 12 || !views.detailed ? 'collapsed' : 'detailed');
  // page.html#kernel=N opens with kernel N shown, as a click on it would (links, and the tests).
  var opened = /kernel=(\d+)/.exec(location.hash);
  if (opened && data.kernels[Number(opened[1])]) show(Number(opened[1]));

  // Tests look for this: it is written only when everything above ran.
  var status = document.getElementById('dscc-status');
  status.textContent = 'ready: ' + data.kernels.length + ' kernels';
  document.body.setAttribute('data-dscc-ready', '1');
})();
)JS";

}  // namespace

std::string viewJson(const ViewModel& v) {
  const Function& f = *v.fe->func;
  std::ostringstream j;
  j << "{\"dscc_view\": 1, \"model\": " << jsonString(v.model) << ", \"function\": " << jsonString(f.name)
    << ",\n\"sizes\": ";
  if (v.sizes) {
    j << "{";
    bool first = true;
    for (const auto& [name, value] : *v.sizes) {
      j << (first ? "" : ", ") << jsonString(name) << ": " << value;
      first = false;
    }
    j << "}";
  } else {
    j << "null";
  }
  j << ",\n\"profile\": ";
  if (v.profileFile.empty()) j << "null";
  else j << "{\"file\": " << jsonString(v.profileFile) << ", \"total_ns\": " << v.profileTotalNs << "}";
  j << ",\n\"args\": [";
  for (size_t i = 0; i < f.args.size(); ++i)
    j << (i ? ", " : "") << "{\"name\": " << jsonString(f.args[i]->name) << ", \"type\": "
      << jsonString(f.args[i]->type.str()) << "}";
  j << "],\n\"kernels\": [";
  for (size_t i = 0; i < v.kernels.size(); ++i) {
    const KernelExplain& k = v.kernels[i];
    const codegen::KernelPlan& plan = v.fe->plan.kernels[i];
    j << (i ? ",\n" : "\n") << "{\"index\": " << k.index << ", \"symbol\": " << jsonString(k.symbol)
      << ", \"result\": " << jsonString(k.result) << ", \"kind\": " << jsonString(kernelKindName(k.kind))
      << ", \"type\": " << jsonString(k.type) << ", \"ops\": " << jsonString(k.ops)
      << ", \"blas\": " << jsonString(k.blas) << ", \"has_kernel\": " << (k.hasKernel ? "true" : "false")
      << ", \"versions\": [";
    for (size_t q = 0; q < k.versions.size(); ++q) j << (q ? ", " : "") << jsonString(k.versions[q]);
    j << "], \"guards\": [";
    for (size_t q = 0; q < k.guards.size(); ++q) {
      const GuardExplain& g = k.guards[q];
      j << (q ? ", " : "") << "{\"kind\": " << jsonString(g.kind) << ", \"text\": " << jsonString(g.text)
        << ", \"proved\": " << (g.proved ? "true" : "false")
        << ", \"holds\": " << (g.holds ? (*g.holds ? "true" : "false") : "null") << "}";
    }
    j << "], \"tuned\": " << jsonString(k.tuned) << ", \"runs\": " << (k.runs.empty() ? "null" : jsonString(k.runs))
      << ", \"runs_version\": " << (k.runs.empty() ? "null" : jsonString(runsVersion(k)));
    auto t = v.times.find(k.symbol);
    j << ", \"time_ns\": " << (t == v.times.end() ? 0 : t->second.ns)
      << ", \"calls\": " << (t == v.times.end() ? 0 : t->second.calls)
      << ", \"share\": " << jsonNumber(timeShare(v, k.symbol), 6) << ", \"explain\": " << jsonString(k.text)
      << ", \"ir\": " << jsonString(printOp(*plan.fusion)) << "}";
  }
  j << "\n]}";
  return j.str();
}

std::string viewPage(const ViewModel& v, const std::string& detailed, const std::string& collapsed) {
  std::ostringstream h;
  std::string title = "dscc view: @" + v.fe->func->name + " (" + v.model + ")";
  std::string safeTitle;
  for (char c : title) safeTitle += c == '<' ? "&lt;" : c == '&' ? "&amp;" : std::string(1, c);
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << safeTitle
    << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<div id=\"main\">\n<div id=\"bar\"><b>"
    << safeTitle << "</b> <span>" << v.kernels.size() << " kernels</span>"
    << " <label>view <select id=\"mode\"><option value=\"collapsed\">one node per kernel</option>"
    << (detailed.empty() ? "" : "<option value=\"detailed\">ops in fusion groups</option>")
    << "</select></label> <input id=\"search\" type=\"search\" placeholder=\"search kernels and ops\">"
    << " <span id=\"hits\"></span> <button id=\"zoom-in\">+</button><button id=\"zoom-out\">&minus;</button>"
    << " <span id=\"dscc-status\">the page's script has not run</span></div>\n<div id=\"graph\">\n"
    << "<div id=\"svg-collapsed\">" << inlineSvg(collapsed) << "</div>\n";
  if (!detailed.empty()) h << "<div id=\"svg-detailed\" style=\"display:none\">" << inlineSvg(detailed) << "</div>\n";
  h << "</div>\n</div>\n<div id=\"side\">\n<ul id=\"kernels\"></ul>\n<div id=\"details\" class=\"muted\">"
       "Click a kernel for its versions, guards, explain text and IR.</div>\n</div>\n"
    << "<script type=\"application/json\" id=\"dscc-data\">\n" << viewJson(v) << "\n</script>\n<script>" << kScript
    << "</script>\n</body>\n</html>\n";
  return h.str();
}

}  // namespace dscc::tools
