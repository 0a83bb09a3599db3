// One YAML document per file: the line of a second document's `---`, found in the text.
#pragma once

#include <string>

namespace dscc::tuner {

/// The 1-based line of the first `---` document marker that follows content
/// (a key, a value: not blank lines, comments or `%` directives), or 0 when
/// the text holds one document. Our readers take one document per file and
/// call this before yaml-cpp: YAML::LoadAll did not return on a 44-byte fuzz
/// input, and YAML::Load silently ignores what follows the first document.
int secondDocumentLine(const std::string& text);

}  // namespace dscc::tuner
