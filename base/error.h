#pragma once
// One family of checks. User mistakes throw sonata::Error with one sentence naming the
// input. Library failures (CUDA, cuBLAS, cuDNN, cuFFT, NCCL, MPI, kernel launches) go
// through SONATA_LIB_CHECK, which reports file, line, the call's text and the rank, then
// hands the message to the fatal handler (under MPI: abort the whole job).
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace sonata {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failure reported by a library (CUDA, cuBLAS, ...), with its place in the message.
class LibraryError : public Error {
 public:
  using Error::Error;
};

template <typename... Args>
std::string str(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

// The rank printed in library errors; -1 (the default) prints none. comm/ sets it.
void set_error_rank(int rank);
int error_rank();

// Called with the full message before a LibraryError is thrown. The default does nothing;
// comm/ installs one that aborts every rank so that peers never hang.
using FatalHandler = void (*)(const std::string& message);
void set_fatal_handler(FatalHandler handler);

[[noreturn]] void fail_library(const char* library, const char* file, int line, const char* call,
                               const std::string& detail);
[[noreturn]] void fail_check(const char* file, int line, const char* condition,
                             const std::string& message);

}  // namespace sonata

// The generic check every library macro is built on.
#define SONATA_LIB_CHECK(library, call, ok_value, describe)                                 \
  do {                                                                                      \
    const auto sonata_status_ = (call);                                                     \
    if (sonata_status_ != (ok_value))                                                       \
      ::sonata::fail_library(library, __FILE__, __LINE__, #call, describe(sonata_status_)); \
  } while (0)

// Argument and invariant checks: throws sonata::Error with the message and the place.
#define SONATA_CHECK(condition, ...)                                                    \
  do {                                                                                  \
    if (!(condition))                                                                   \
      ::sonata::fail_check(__FILE__, __LINE__, #condition, ::sonata::str(__VA_ARGS__)); \
  } while (0)

#define SONATA_UNREACHABLE(what) ::sonata::fail_check(__FILE__, __LINE__, "unreachable", what)
