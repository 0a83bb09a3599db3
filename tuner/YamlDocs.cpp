// One YAML document per file: the line of a second document's `---`, found in the text.
#include "tuner/YamlDocs.h"

#include <algorithm>

namespace dscc::tuner {

int secondDocumentLine(const std::string& text) {
  bool content = false;
  int line = 1;
  for (size_t i = 0; i <= text.size(); ++line) {
    size_t end = std::min(text.find('\n', i), text.size());
    std::string l = text.substr(i, end - i);
    bool marker = l.compare(0, 3, "---") == 0 && (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    if (marker && content) return line;
    size_t k = l.find_first_not_of(" \t\r");
    if (!marker && k != std::string::npos && l[k] != '#' && l[0] != '%') content = true;
    i = end + 1;
  }
  return 0;
}

}  // namespace dscc::tuner
