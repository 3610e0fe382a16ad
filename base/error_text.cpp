#include "base/error_text.h"

#include <array>
#include <cctype>
#include <string_view>

namespace sonata {
namespace {

// Hand-written rather than <regex>: GCC 12's <regex> trips -Wmaybe-uninitialized in
// sanitizer builds, and these patterns are simple.

// base/error.cpp's project_relative locations: " (engine/optim/sgd.cpp:42)". Returns the
// length of the location starting at `at`, or 0.
size_t location_length(std::string_view text, size_t at) {
  static constexpr std::array<std::string_view, 9> kFloors = {
      "base/", "kernels/", "engine/", "models/", "data/", "comm/", "train/", "tools/", "tests/"};
  if (text.substr(at, 2) != " (") return 0;
  size_t i = at + 2;
  bool floor = false;
  for (std::string_view prefix : kFloors)
    if (text.substr(i, prefix.size()) == prefix) {
      i += prefix.size();
      floor = true;
      break;
    }
  if (!floor) return 0;
  const size_t path_start = i;
  while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) ||
                             std::string_view("_./+-").find(text[i]) != std::string_view::npos))
    ++i;
  if (i == path_start || i >= text.size() || text[i] != ':') return 0;
  const size_t digits_start = ++i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == digits_start || i >= text.size() || text[i] != ')') return 0;
  return i + 1 - at;
}

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

}  // namespace

std::string error_text(const std::string& what, bool with_location) {
  std::string text;
  for (size_t i = 0; i < what.size();) {
    const size_t location = with_location ? 0 : location_length(what, i);
    if (location > 0) {
      i += location;
      continue;
    }
    text += what[i++];
  }
  // One line: a break (and the white space around it) reads as a "; " join.
  std::string joined;
  for (size_t i = 0; i < text.size();) {
    size_t end = i;
    while (end < text.size() && is_space(text[end]) && text[end] != '\n') ++end;
    if (end < text.size() && text[end] == '\n') {
      while (end < text.size() && is_space(text[end])) ++end;
      while (!joined.empty() && is_space(joined.back())) joined.pop_back();
      joined += "; ";
      i = end;
      continue;
    }
    joined.append(text, i, end - i);
    if (end < text.size()) joined += text[end];
    i = end + 1;
  }
  const size_t first = joined.find_first_not_of(" \t;");
  const size_t last = joined.find_last_not_of(" \t;");
  return first == std::string::npos ? std::string() : joined.substr(first, last - first + 1);
}

std::string parse_error_text(const std::string& what) {
  // CLI11's "--lr: At Most 1 required but received 2".
  static constexpr std::string_view kMiddle = ": At Most 1 required but received ";
  const size_t middle = what.find(kMiddle);
  if (middle == std::string::npos || middle == 0) return what;
  const std::string flag = what.substr(0, middle);
  const std::string count = what.substr(middle + kMiddle.size());
  for (char c : flag)
    if (is_space(c)) return what;
  if (count.empty()) return what;
  for (char c : count)
    if (!std::isdigit(static_cast<unsigned char>(c))) return what;
  return flag + " is given " + count + " times; give it once";
}

}  // namespace sonata
