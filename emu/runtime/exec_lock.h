#pragma once
// The emulator's one process-wide execution lock. Every runtime call, every piece of work
// and every memory-map check runs under it, so the emulated devices change state one step
// at a time and a seed fixes the order. It is recursive: work running under the lock (a
// library call, a kernel's memory checks) re-enters the runtime's internals.
#include <mutex>

namespace sonata::emu {

class ExecLock {
 public:
  ExecLock();
  ~ExecLock();
  ExecLock(const ExecLock&) = delete;
  ExecLock& operator=(const ExecLock&) = delete;
};

// While the calling thread holds the lock exactly once, lets other host threads run for a
// moment (they may be what a waiting piece of work needs, e.g. a collective's peer).
// Nested holders only sleep: releasing a lock the caller's callers rely on is not safe.
void pause_holding_lock();

}  // namespace sonata::emu
