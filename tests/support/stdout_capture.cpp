#include "tests/support/stdout_capture.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace sonata::testing {

namespace {

// What `call` writes to the file descriptor `target` (1 or 2), whose stdio stream is `stream`.
std::string output_of(int target, std::FILE* stream, const std::string& file,
                      const std::function<void()>& call) {
  std::fflush(stream);
  const int saved = dup(target);
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (saved < 0 || fd < 0) throw std::runtime_error("output_of: cannot redirect to " + file);
  dup2(fd, target);
  close(fd);
  auto restore = [&] {
    std::fflush(stream);
    dup2(saved, target);
    close(saved);
  };
  try {
    call();
  } catch (...) {
    restore();
    throw;
  }
  restore();
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

std::string stdout_of(const std::string& file, const std::function<void()>& call) {
  return output_of(1, stdout, file, call);
}

std::string stderr_of(const std::string& file, const std::function<void()>& call) {
  return output_of(2, stderr, file, call);
}

}  // namespace sonata::testing
