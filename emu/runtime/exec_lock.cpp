#include "emu/runtime/exec_lock.h"

#include <chrono>
#include <thread>

namespace sonata::emu {

namespace {

std::recursive_mutex& lock_instance() {
  // Leaked on purpose: static destructors of other objects may still call the runtime.
  static auto* lock = new std::recursive_mutex;
  return *lock;
}

thread_local int t_depth = 0;

}  // namespace

ExecLock::ExecLock() {
  lock_instance().lock();
  ++t_depth;
}

ExecLock::~ExecLock() {
  --t_depth;
  lock_instance().unlock();
}

void pause_holding_lock() {
  if (t_depth == 1) {
    lock_instance().unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    lock_instance().lock();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace sonata::emu
