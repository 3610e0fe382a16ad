#include "base/math_mode.h"

#include <atomic>

#include "base/error.h"

namespace sonata {
namespace {
std::atomic<Tf32Mode> mode{kDefaultTf32Mode};
}  // namespace

void set_tf32_mode(Tf32Mode value) {
  mode = value;
}
Tf32Mode tf32_mode() {
  return mode;
}
bool tf32_allowed_in_conv() {
  return mode != Tf32Mode::off;
}
bool tf32_allowed_in_gemm() {
  return mode == Tf32Mode::all;
}

Tf32Mode parse_tf32_mode(const std::string& text, const std::string& what) {
  for (Tf32Mode candidate : {Tf32Mode::off, Tf32Mode::conv, Tf32Mode::all})
    if (text == tf32_mode_name(candidate)) return candidate;
  throw Error(str(what, " must be off, conv or all, got '", text, "'"));
}

Tf32ModeGuard::Tf32ModeGuard(Tf32Mode value) : previous_(tf32_mode()) {
  set_tf32_mode(value);
}
Tf32ModeGuard::~Tf32ModeGuard() {
  set_tf32_mode(previous_);
}

const char* tf32_mode_name(Tf32Mode value) {
  switch (value) {
    case Tf32Mode::off:
      return "off";
    case Tf32Mode::conv:
      return "conv";
    case Tf32Mode::all:
      return "all";
  }
  return "?";
}

}  // namespace sonata
