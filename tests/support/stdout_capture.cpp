#include "tests/support/stdout_capture.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace sonata::testing {

std::string stdout_of(const std::string& file, const std::function<void()>& call) {
  std::fflush(stdout);
  const int saved = dup(1);
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (saved < 0 || fd < 0) throw std::runtime_error("stdout_of: cannot redirect stdout to " + file);
  dup2(fd, 1);
  close(fd);
  auto restore = [&] {
    std::fflush(stdout);
    dup2(saved, 1);
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

}  // namespace sonata::testing
