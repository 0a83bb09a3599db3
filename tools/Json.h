// Writing JSON text by hand (profiles, traces, the view page's data): string quoting only, no dependency.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace dscc::tools {

/// `s` as a JSON string literal, quotes included, safe inside an HTML <script> element.
inline std::string jsonString(const std::string& s) {
  std::string r = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    // "</" as "<\/" (the same string in JSON), so no "</script>" can end the element early.
    if (c == '/' && i > 0 && s[i - 1] == '<') {
      r += "\\/";
      continue;
    }
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\n': r += "\\n"; break;
      case '\t': r += "\\t"; break;
      case '\r': r += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          r += buf;
        } else {
          r += static_cast<char>(c);
        }
    }
  }
  return r + "\"";
}

/// A finite number as JSON (NaN and infinities, which JSON lacks, become 0), with up to `digits` significant digits.
inline std::string jsonNumber(double v, int digits = 15) {
  if (!std::isfinite(v)) return "0";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

}  // namespace dscc::tools
