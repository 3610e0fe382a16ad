#pragma once
// One training run per --checkpoint-dir, held while the run lives by two exclusive flocks:
// on the folder itself, which no removal or replacement of a file inside can walk around (a
// trainer.lock deleted by a clean-up script lets no second trainer in), and on
// `<dir>/trainer.lock`, which records the holder's pid for the refusal and is what trainers
// before the folder lock took. The kernel drops both when the process ends in any way
// (kill -9 included), so a lock is never left stuck; a second trainer on the same folder is
// refused, naming the folder and the holder's pid, before it reads or writes anything there.
// The lock file is opened without following a symbolic link: one planted there is refused,
// never followed to truncate its target.
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
  int folder_fd_ = -1, fd_ = -1;
};

}  // namespace sonata
