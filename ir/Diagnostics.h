// Source buffers, locations and the diagnostic engine (`file:line:col: error: ...`).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace dscc {

/// A position in a source buffer (1-based line and column). file < 0: unknown.
struct Location {
  int file = -1;
  int line = 0;
  int col = 0;
  bool valid() const { return file >= 0; }
};

/// Reads the regular file `path` into `out`. A device, FIFO or directory
/// (which could be read forever) or a file over `limit` bytes is refused with
/// `err` set ("cannot read 'x': not a regular file").
bool readRegularFile(const std::string& path, std::string& out, std::string* err,
                     uintmax_t limit = uintmax_t(1) << 30);

/// `s` safe to print on a terminal: control bytes and bytes that are not
/// part of valid UTF-8 become `\xNN` (as the lexer shows them), so a binary
/// file's bytes quoted in a message do not reach the terminal raw.
std::string escapeNonPrintable(const std::string& s);

/// Owns the text of every source file read, so diagnostics can quote lines.
class SourceMgr {
 public:
  /// Adds a buffer; returns its file id.
  int addBuffer(std::string name, std::string text);
  /// Reads a file into a new buffer; returns -1 and sets `err` if unreadable.
  int addFile(const std::string& path, std::string* err);
  const std::string& name(int id) const { return bufs_[id].name; }
  const std::string& text(int id) const { return bufs_[id].text; }
  /// The text of a 1-based line without its newline ("" if out of range).
  std::string lineText(int id, int line) const;
  /// Marks buffer `id` as generated from another file (an imported ONNX
  /// model): diagnostics in it name `labels[line]` (the ONNX node a line
  /// came from) instead of a line and column of a text the user never saw.
  void setGenerated(int id, std::map<int, std::string> labels);
  /// Whether buffer `id` is generated; its label for `line` ("" if none).
  bool generated(int id) const;
  std::string lineLabel(int id, int line) const;

 private:
  struct Buf {
    std::string name, text;
    bool generated = false;
    std::map<int, std::string> labels;
  };
  std::vector<Buf> bufs_;
};

enum class Severity { Error, Warning, Note };

/// One reported diagnostic.
struct Diagnostic {
  Severity severity;
  Location loc;
  std::string message;
};

/// Collects and prints diagnostics. In capture mode (for --verify-diagnostics)
/// diagnostics are recorded and not printed.
class DiagEngine {
 public:
  DiagEngine(const SourceMgr& sm, std::ostream& os) : sm_(sm), os_(os) {}
  void error(Location loc, const std::string& msg) { report(Severity::Error, loc, msg); }
  void warning(Location loc, const std::string& msg) { report(Severity::Warning, loc, msg); }
  void note(Location loc, const std::string& msg) { report(Severity::Note, loc, msg); }
  void report(Severity s, Location loc, const std::string& msg);
  int errorCount() const { return errors_; }
  /// Record instead of print.
  void setCapture(bool on) { capture_ = on; }
  const std::vector<Diagnostic>& captured() const { return captured_; }
  void clearCaptured() { captured_.clear(); }
  /// Formats one diagnostic with its source line and caret.
  std::string format(const Diagnostic& d) const;
  const SourceMgr& sources() const { return sm_; }

 private:
  const SourceMgr& sm_;
  std::ostream& os_;
  int errors_ = 0;
  bool capture_ = false;
  std::vector<Diagnostic> captured_;
};

/// Checks captured diagnostics against `// expected-error {{...}}` comments in
/// buffer `file` (also expected-warning / expected-note, with @+N / @-N line
/// offsets). Prints mismatches to `os`; returns true when all match.
bool verifyExpectedDiagnostics(const DiagEngine& diags, int file, std::ostream& os);

}  // namespace dscc
