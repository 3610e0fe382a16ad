#include "train/checkpoint_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace sonata {
namespace {

// The pid the holder wrote into the file, or "" when there is none (yet).
std::string holder_pid(int fd) {
  char text[32] = {};
  const ssize_t got = pread(fd, text, sizeof text - 1, 0);
  std::string pid = got > 0 ? std::string(text, size_t(got)) : std::string();
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}

}  // namespace

CheckpointDirLock::CheckpointDirLock(const std::string& folder) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  SONATA_CHECK(!error, "--checkpoint-dir '", folder, "' cannot be created: ", error.message());
  const std::string path = folder + "/" + kFileName;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  SONATA_CHECK(fd_ >= 0, "--checkpoint-dir '", folder, "': cannot open its lock file ", path, ": ",
               std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int cause = errno;
    const std::string pid = holder_pid(fd_);
    ::close(fd_);
    fd_ = -1;
    SONATA_CHECK(cause == EWOULDBLOCK, "--checkpoint-dir '", folder, "': cannot lock ", path, ": ",
                 std::strerror(cause));
    throw Error(str("--checkpoint-dir '", folder, "' is in use by another trainer (",
                    pid.empty() ? std::string("pid unknown") : "pid " + pid,
                    "); wait for it to end, or give this run another --checkpoint-dir"));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size()))
    std::fprintf(stderr, "warning: could not write the pid into %s: %s\n", path.c_str(),
                 std::strerror(errno));
}

CheckpointDirLock::~CheckpointDirLock() {
  // Closing drops the lock; the file stays (removing it would race with the next locker).
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace sonata
