#include "engine/checkpoint/checkpoint_files.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace fs = std::filesystem;

namespace sonata::checkpoint_files {
namespace {

constexpr char kStepPrefix[] = "step-";
constexpr char kTemporaryMarker[] = ".tmp-";

}  // namespace

std::string step_folder_name(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%012lld", static_cast<long long>(step));
  return name;
}

std::optional<int64_t> parse_step_folder_name(const std::string& name) {
  const size_t prefix = sizeof(kStepPrefix) - 1;
  if (name.size() <= prefix || name.compare(0, prefix, kStepPrefix) != 0) return std::nullopt;
  int64_t step = 0;
  const char* first = name.data() + prefix;
  const char* last = name.data() + name.size();
  if (!std::all_of(first, last, [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  const auto [end, error] = std::from_chars(first, last, step);
  if (error != std::errc() || end != last) return std::nullopt;
  return step;
}

std::vector<std::pair<int64_t, std::string>> list_step_folders(const std::string& directory) {
  std::vector<std::pair<int64_t, std::string>> folders;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
    const std::optional<int64_t> step = parse_step_folder_name(entry.path().filename().string());
    if (step && entry.is_directory() && !entry.is_symlink())
      folders.emplace_back(*step, entry.path().string());
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

std::string temporary_path(const std::string& directory, const std::string& name,
                           const std::string& suffix) {
  return (fs::path(directory) / str(".", name, kTemporaryMarker, ::getpid(), suffix)).string();
}

void remove_stale_temporaries(const std::string& directory) {
  std::error_code error;
  std::vector<fs::path> stale;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    const size_t marker = name.find(kTemporaryMarker);
    if (name.empty() || name[0] != '.' || marker == std::string::npos) continue;
    const char* first = name.data() + marker + sizeof(kTemporaryMarker) - 1;
    long long pid = -1;
    std::from_chars(first, name.data() + name.size(), pid);
    if (pid != static_cast<long long>(::getpid())) stale.push_back(entry.path());
  }
  for (const fs::path& path : stale) fs::remove_all(path, error);
}

void fsync_directory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) throw Error(str("cannot open folder '", path, "': ", std::strerror(errno)));
  const int status = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (status != 0) throw Error(str("flushing folder '", path, "' failed: ", std::strerror(saved)));
}

void rename_into_place(const std::string& from, const std::string& to) {
  std::error_code error;
  if (fs::is_directory(fs::symlink_status(to, error))) {
    // The same step saved again: swap the folders in one step, then drop the old one.
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) {
      fs::remove_all(from, error);
      return;
    }
    if (errno != EINVAL && errno != ENOSYS)
      throw Error(str("replacing '", to, "' with '", from, "' failed: ", std::strerror(errno)));
    // A file system without the exchange (NFS): the old folder steps aside first, leaving a
    // moment without this step.
    const std::string aside = from + ".replaced";
    if (std::rename(to.c_str(), aside.c_str()) != 0)
      throw Error(str("moving '", to, "' aside failed: ", std::strerror(errno)));
    fs::remove_all(aside, error);
  }
  if (std::rename(from.c_str(), to.c_str()) != 0)
    throw Error(str("renaming '", from, "' to '", to, "' failed: ", std::strerror(errno)));
}

void replace_symlink(const std::string& directory, const std::string& name,
                     const std::string& target) {
  const std::string temporary = temporary_path(directory, name);
  ::unlink(temporary.c_str());
  if (::symlink(target.c_str(), temporary.c_str()) != 0)
    throw Error(str("cannot create the link '", temporary, "': ", std::strerror(errno)));
  const std::string path = (fs::path(directory) / name).string();
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    throw Error(str("cannot replace the link '", path, "': ", std::strerror(saved)));
  }
}

void remove_step_folder(const std::string& directory, const std::string& path) {
  const std::string doomed =
      temporary_path(directory, fs::path(path).filename().string(), ".removed");
  if (std::rename(path.c_str(), doomed.c_str()) != 0)
    throw Error(str("cannot remove the old checkpoint '", path, "': ", std::strerror(errno)));
  std::error_code error;
  fs::remove_all(doomed, error);
}

}  // namespace sonata::checkpoint_files
