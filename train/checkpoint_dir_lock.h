#pragma once
// One training run per --checkpoint-dir: an exclusive flock on `<dir>/trainer.lock`, held
// while the run lives. The kernel drops it when the process ends in any way (kill -9
// included), so a lock is never left stuck; a second trainer on the same folder is refused,
// naming the folder and the holder's pid, before it reads or writes anything there.
#include <string>

namespace sonata {

class CheckpointDirLock {
 public:
  // Creates `folder` if needed and takes its lock, or throws Error naming the folder and
  // the pid recorded by the process that holds it.
  explicit CheckpointDirLock(const std::string& folder);
  ~CheckpointDirLock();
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;

  static constexpr const char* kFileName = "trainer.lock";

 private:
  int fd_ = -1;
};

}  // namespace sonata
