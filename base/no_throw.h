#pragma once
// For code that must not throw: destructors and deleters (an exception leaving a destructor
// calls std::terminate, during unwinding or not, since destructors are noexcept). The body
// may call anything that throws (current_stream selects a device and may create a stream,
// either of which can fail); a failure is reported on stderr, naming `what`, and swallowed.
#include <cstdio>
#include <exception>

namespace sonata {

// Runs `body`; returns true when it finished, false when it threw (reported, not rethrown).
template <typename Body>
bool run_without_throwing(const char* what, Body&& body) noexcept {
  try {
    body();
    return true;
  } catch (const std::exception& failure) {
    std::fprintf(stderr, "sonata: %s failed: %s\n", what, failure.what());
  } catch (...) {
    std::fprintf(stderr, "sonata: %s failed with an unknown exception\n", what);
  }
  return false;
}

}  // namespace sonata
