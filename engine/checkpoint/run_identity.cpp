#include "engine/checkpoint/run_identity.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/checkpoint/checkpoint_files.h"

namespace fs = std::filesystem;

namespace sonata {

std::string read_run_id(const std::string& directory) {
  const std::string path = (fs::path(directory) / kRunFile).string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const nlohmann::json record = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || !record.contains("run") || !record["run"].is_string() ||
      record["run"].get<std::string>().empty())
    throw Error(str("'", path, "' is not the run record sonata writes ({\"run\": \"<id>\"}); ",
                    "remove it only if this folder holds no run"));
  return record["run"].get<std::string>();
}

std::string new_run_id() {
  uint64_t bits = 0;
  std::ifstream random("/dev/urandom", std::ios::binary);
  if (!random.read(reinterpret_cast<char*>(&bits), sizeof bits))
    throw Error("cannot read /dev/urandom for a run id");
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
  return text;
}

void write_run_id(const std::string& directory, const std::string& id) {
  const std::string path = (fs::path(directory) / kRunFile).string();
  const std::string temporary = checkpoint_files::temporary_path(directory, kRunFile);
  const std::string text = nlohmann::json{{"run", id}}.dump() + "\n";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  if (fd < 0) throw Error(str("cannot write '", temporary, "': ", std::strerror(errno)));
  const bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  const bool flushed = written && ::fsync(fd) == 0;
  ::close(fd);
  if (!flushed || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    throw Error(str("cannot write '", path, "': ", std::strerror(saved)));
  }
  checkpoint_files::fsync_directory(directory);
}

}  // namespace sonata
