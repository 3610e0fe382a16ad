#pragma once
// Helpers of the emulated runtime's self-tests: work items that stand in for kernels, and
// stderr capture to check the emulator's messages.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cuda_runtime_api.h"
#include "emu/runtime/device_table.h"
#include "emu/runtime/device_work.h"
#include "emu/runtime/scheduler.h"

namespace sonata::emu::test {

// A piece of work that writes `value` to the int at `target` (device memory), declaring it.
inline Work write_int(int* target, int value, std::string name = "write_int") {
  Work work;
  work.name = std::move(name);
  work.writes.push_back({target, sizeof(int)});
  work.run = [target, value] { *target = value; };
  return work;
}

// A piece of work that copies the int at `source` to `target` (a consumer kernel).
inline Work copy_int(int* target, const int* source, std::string name = "copy_int") {
  Work work;
  work.name = std::move(name);
  work.reads.push_back({source, sizeof(int)});
  work.writes.push_back({target, sizeof(int)});
  work.run = [target, source] { *target = *source; };
  return work;
}

// Captures what is written to file descriptor 2 while it lives.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    saved_ = dup(2);
    std::snprintf(path_, sizeof path_, "/tmp/sonata_emu_stderr_XXXXXX");
    const int fd = mkstemp(path_);
    dup2(fd, 2);
    close(fd);
  }
  ~StderrCapture() { restore(); }
  std::string text() {
    restore();
    std::ifstream file(path_);
    std::stringstream all;
    all << file.rdbuf();
    unlink(path_);
    return all.str();
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }
  char path_[64];
  int saved_ = -1;
};

}  // namespace sonata::emu::test
