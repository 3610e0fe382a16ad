#include "tools/trainer/error_text.h"

#include <regex>

namespace sonata {

std::string error_text(const std::string& what, bool with_location) {
  std::string text = what;
  if (!with_location) {
    // base/error.cpp's project_relative paths: " (engine/optim/sgd.cpp:42)".
    static const std::regex location(
        R"( \((base|kernels|engine|models|data|comm|tools|tests)/[A-Za-z0-9_./+-]+:[0-9]+\))");
    text = std::regex_replace(text, location, "");
  }
  // One line: a break (and the indentation after it) reads as a "; " join.
  static const std::regex breaks(R"(\s*\n\s*)");
  text = std::regex_replace(text, breaks, "; ");
  const size_t first = text.find_first_not_of(" \t;");
  const size_t last = text.find_last_not_of(" \t;");
  return first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
}

std::string parse_error_text(const std::string& what) {
  static const std::regex repeated(R"(^(\S+): At Most 1 required but received ([0-9]+)$)");
  std::smatch match;
  if (std::regex_match(what, match, repeated))
    return match[1].str() + " is given " + match[2].str() + " times; give it once";
  return what;
}

}  // namespace sonata
