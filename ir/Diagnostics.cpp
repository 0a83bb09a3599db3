// Diagnostic printing and --verify-diagnostics matching.
#include "ir/Diagnostics.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace dscc {

int SourceMgr::addBuffer(std::string name, std::string text) {
  bufs_.push_back({std::move(name), std::move(text)});
  return static_cast<int>(bufs_.size()) - 1;
}

std::string escapeNonPrintable(const std::string& s) {
  std::string o;
  auto hex = [&](unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    o += buf;
  };
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) hex(c);
      else o += static_cast<char>(c);
      ++i;
      continue;
    }
    // A UTF-8 sequence: its lead byte gives the length; every other byte has 10 in its top two bits.
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok) {
      o.append(s, i, n);
      i += n;
    } else {
      hex(c);
      ++i;
    }
  }
  return o;
}

bool readRegularFile(const std::string& path, std::string& out, std::string* err, uintmax_t limit) {
  // Only a regular file of bounded size: /dev/zero or a FIFO would be read
  // forever, and a multi-gigabyte text is not one of ours.
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    if (err) *err = "cannot open '" + path + "'";
    return false;
  }
  if (!std::filesystem::is_regular_file(st)) {
    if (err) *err = "cannot read '" + path + "': not a regular file";
    return false;
  }
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > limit) {
    if (err) *err = "cannot read '" + path + "': " + std::to_string(size) + " bytes, over the limit of " +
                    std::to_string(limit);
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (err) *err = "cannot open '" + path + "'";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

int SourceMgr::addFile(const std::string& path, std::string* err) {
  std::string text;
  if (!readRegularFile(path, text, err)) return -1;
  return addBuffer(path, std::move(text));
}

std::string SourceMgr::lineText(int id, int line) const {
  if (id < 0 || id >= static_cast<int>(bufs_.size()) || line < 1) return "";
  const std::string& t = bufs_[id].text;
  size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    pos = t.find('\n', pos);
    if (pos == std::string::npos) return "";
    ++pos;
  }
  size_t end = t.find('\n', pos);
  std::string s = t.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

void SourceMgr::setGenerated(int id, std::map<int, std::string> labels) {
  bufs_[id].generated = true;
  bufs_[id].labels = std::move(labels);
}

bool SourceMgr::generated(int id) const {
  return id >= 0 && id < static_cast<int>(bufs_.size()) && bufs_[id].generated;
}

std::string SourceMgr::lineLabel(int id, int line) const {
  if (!generated(id)) return "";
  auto it = bufs_[id].labels.find(line);
  return it == bufs_[id].labels.end() ? "" : it->second;
}

std::string DiagEngine::format(const Diagnostic& d) const {
  static const char* kinds[] = {"error", "warning", "note"};
  std::string out;
  if (d.loc.valid() && sm_.generated(d.loc.file)) {
    // A generated text (an imported model): the file the user has, the part
    // of it the line came from, and the line itself as the program it became.
    std::string label = sm_.lineLabel(d.loc.file, d.loc.line);
    out += sm_.name(d.loc.file) + ": " + kinds[static_cast<int>(d.severity)] + ": " + (label.empty() ? "" : label + ": ") +
           d.message + "\n";
    std::string line = sm_.lineText(d.loc.file, d.loc.line);
    if (size_t c = line.find("  // "); c != std::string::npos) line.resize(c);
    size_t b = line.find_first_not_of(' ');
    if (b != std::string::npos) out += "  imported as: " + line.substr(b) + "\n";
    return out;
  }
  if (d.loc.valid())
    out += sm_.name(d.loc.file) + ":" + std::to_string(d.loc.line) + ":" +
           std::to_string(d.loc.col) + ": ";
  out += std::string(kinds[static_cast<int>(d.severity)]) + ": " + d.message + "\n";
  if (d.loc.valid()) {
    std::string line = sm_.lineText(d.loc.file, d.loc.line);
    if (!line.empty()) {
      out += line + "\n";
      std::string caret;
      for (int i = 1; i < d.loc.col && i <= static_cast<int>(line.size()); ++i)
        caret += line[i - 1] == '\t' ? '\t' : ' ';
      out += caret + "^\n";
    }
  }
  return out;
}

void DiagEngine::report(Severity s, Location loc, const std::string& msg) {
  if (s == Severity::Error) ++errors_;
  Diagnostic d{s, loc, msg};
  if (capture_)
    captured_.push_back(d);
  else
    os_ << format(d);
}

bool verifyExpectedDiagnostics(const DiagEngine& diags, int file, std::ostream& os) {
  struct Expect {
    Severity sev;
    int line;
    std::string text;
    bool matched = false;
  };
  std::vector<Expect> expects;
  const SourceMgr& sm = diags.sources();
  std::istringstream in(sm.text(file));
  std::string line;
  static const std::regex re(R"(expected-(error|warning|note)(@([+-]?)(\d+))?\s*\{\{(.*?)\}\})");
  for (int ln = 1; std::getline(in, line); ++ln) {
    for (std::sregex_iterator it(line.begin(), line.end(), re), end; it != end; ++it) {
      const auto& m = *it;
      Severity sev = m[1] == "error" ? Severity::Error
                     : m[1] == "warning" ? Severity::Warning : Severity::Note;
      int target = ln;
      if (m[2].matched) {
        int n = std::stoi(m[4]);
        target = m[3] == "+" ? ln + n : m[3] == "-" ? ln - n : n;
      }
      expects.push_back({sev, target, m[5]});
    }
  }
  bool ok = true;
  static const char* kinds[] = {"error", "warning", "note"};
  for (const Diagnostic& d : diags.captured()) {
    bool found = false;
    for (auto& e : expects) {
      if (!e.matched && e.sev == d.severity && d.loc.file == file && e.line == d.loc.line &&
          d.message.find(e.text) != std::string::npos) {
        e.matched = found = true;
        break;
      }
    }
    if (!found) {
      ok = false;
      os << "unexpected " << diags.format(d);
    }
  }
  for (const auto& e : expects)
    if (!e.matched) {
      ok = false;
      os << sm.name(file) << ":" << e.line << ": expected " << kinds[static_cast<int>(e.sev)]
         << " \"" << e.text << "\" was not produced\n";
    }
  return ok;
}

}  // namespace dscc
