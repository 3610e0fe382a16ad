#include "train/state/checkpoint_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
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
  const ssize_t got = fd >= 0 ? pread(fd, text, sizeof text - 1, 0) : 0;
  std::string pid = got > 0 ? std::string(text, size_t(got)) : std::string();
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}

Error in_use(const std::string& folder, const std::string& pid) {
  return Error(str("--checkpoint-dir '", folder, "' is in use by another trainer (",
                   pid.empty() ? std::string("pid unknown") : "pid " + pid,
                   "); wait for it to end, or give this run another --checkpoint-dir"));
}

// An exclusive flock on `fd` without waiting: true when taken, false when another holds it.
bool try_lock(int fd, const std::string& folder, const std::string& what) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
  const int cause = errno;
  SONATA_CHECK(cause == EWOULDBLOCK, "--checkpoint-dir '", folder, "': cannot lock ", what, ": ",
               std::strerror(cause));
  return false;
}

}  // namespace

CheckpointDirLock::CheckpointDirLock(const std::string& folder) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  SONATA_CHECK(!error, "--checkpoint-dir '", folder, "' cannot be created: ", error.message());
  const std::string path = folder + "/" + kFileName;
  // Never through a link: what it points at is not this folder's to truncate.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int cause = errno;
    SONATA_CHECK(cause != ELOOP, "--checkpoint-dir '", folder, "': its lock file ", path,
                 " is a symbolic link, which the trainer does not follow; remove the link (the "
                 "trainer creates its own lock file)");
    throw Error(str("--checkpoint-dir '", folder, "': cannot open its lock file ", path, ": ",
                    std::strerror(cause)));
  }
  struct stat file {};
  if (::fstat(fd_, &file) != 0 || !S_ISREG(file.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw Error(str("--checkpoint-dir '", folder, "': its lock file ", path,
                    " is not a regular file; remove it (the trainer creates its own)"));
  }
  folder_fd_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  SONATA_CHECK(folder_fd_ >= 0, "--checkpoint-dir '", folder,
               "' cannot be opened: ", std::strerror(errno));
  // The file first (the lock older trainers take), then the folder (the one no file
  // operation inside can undo).
  const bool locked = try_lock(fd_, folder, path) && try_lock(folder_fd_, folder, "the folder");
  if (!locked) {
    const std::string pid = holder_pid(fd_);
    ::close(fd_);
    ::close(folder_fd_);
    fd_ = folder_fd_ = -1;
    throw in_use(folder, pid);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size()))
    std::fprintf(stderr, "warning: could not write the pid into %s: %s\n", path.c_str(),
                 std::strerror(errno));
}

CheckpointDirLock::~CheckpointDirLock() {
  // Closing drops the locks; the file stays (removing it would race with the next locker).
  if (fd_ >= 0) ::close(fd_);
  if (folder_fd_ >= 0) ::close(folder_fd_);
}

}  // namespace sonata
