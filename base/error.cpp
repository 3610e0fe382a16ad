#include "base/error.h"

#include <atomic>
#include <cstring>

namespace sonata {
namespace {
std::atomic<int> g_error_rank{-1};
std::atomic<FatalHandler> g_fatal_handler{nullptr};

const char* project_relative(const char* file) {
  // __FILE__ is absolute under CMake; the path inside the repository is what a reader needs.
  // The first floor in this order that the path holds wins: "/train/" after "/tests/", so
  // that tests/train/x.cpp keeps its tests/.
  for (const char* floor : {"/base/", "/kernels/", "/engine/", "/models/", "/data/", "/comm/",
                            "/tools/", "/tests/", "/train/"}) {
    if (const char* at = std::strstr(file, floor)) return at + 1;
  }
  return file;
}
}  // namespace

void set_error_rank(int rank) {
  g_error_rank = rank;
}
int error_rank() {
  return g_error_rank;
}
void set_fatal_handler(FatalHandler handler) {
  g_fatal_handler = handler;
}

void fail_library(const char* library, const char* file, int line, const char* call,
                  const std::string& detail) {
  std::string message = str(library, " error at ", project_relative(file), ":", line);
  if (g_error_rank >= 0) message += str(" [rank ", g_error_rank.load(), "]");
  message += str(": ", call, " -> ", detail);
  if (FatalHandler handler = g_fatal_handler) handler(message);
  throw LibraryError(message);
}

void fail_check(const char* file, int line, const char* condition, const std::string& message) {
  std::string text = message.empty() ? str("check failed: ", condition) : message;
  throw Error(str(text, " (", project_relative(file), ":", line, ")"));
}

}  // namespace sonata
