#include "train/loop/metrics_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace sonata {
namespace {

// The line as JSON; discarded (is_discarded()) when it is not JSON.
nlohmann::json parse_line(const std::string& line) {
  return nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
}

// Whether the record has a "step" past `step`.
bool past_step(const nlohmann::json& record, int64_t step) {
  if (!record.is_object()) return false;
  const auto found = record.find("step");
  return found != record.end() && found->is_number_integer() && found->get<int64_t>() > step;
}

// `text` as the whole content of `path`, flushed to the disk before it returns.
void write_durably(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(str("cannot write '", path, "': ", std::strerror(errno)));
  for (size_t done = 0; done < text.size();) {
    const ssize_t written = ::write(fd, text.data() + done, text.size() - done);
    if (written < 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(path.c_str());
      throw Error(str("writing '", path, "' failed: ", std::strerror(saved)));
    }
    done += size_t(written);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int saved = errno;
    ::unlink(path.c_str());
    throw Error(str("flushing '", path, "' failed: ", std::strerror(saved)));
  }
}

}  // namespace

MetricsLog::MetricsLog(const std::string& path, bool append, IfUnwritable if_unwritable)
    : path_(path) {
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code made;
  if (!parent.empty()) std::filesystem::create_directories(parent, made);
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (file_ == nullptr && if_unwritable == IfUnwritable::write_nothing) {
    unwritable_ = std::strerror(errno);
    return;
  }
  SONATA_CHECK(file_ != nullptr, "cannot open the metrics log ", path, ": ",
               made ? made.message() : std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::write(const nlohmann::ordered_json& record) {
  if (!file_) return;
  const std::string line = record.dump() + "\n";
  const bool ok =
      std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0;
  SONATA_CHECK(ok, "cannot write the metrics log ", path_, ": ", std::strerror(errno));
}

void MetricsLog::drop_after_step(int64_t step) {
  if (!file_) return;
  std::ifstream in(path_, std::ios::binary);
  SONATA_CHECK(in.good(), "cannot read the metrics log ", path_, ": ", std::strerror(errno));
  std::string kept;
  bool changed = false;
  for (std::string line; std::getline(in, line);) {
    // No newline after the last line: a write that a kill interrupted, whole or not.
    const bool cut_short = in.eof();
    const nlohmann::json record = parse_line(line);
    changed |= cut_short;
    if (past_step(record, step) || (cut_short && record.is_discarded())) {
      changed = true;
      continue;
    }
    kept += line + "\n";
  }
  if (!changed) return;
  const std::string rewritten = path_ + ".rewrite";
  write_durably(rewritten, kept);
  if (std::rename(rewritten.c_str(), path_.c_str()) != 0) {
    const int saved = errno;
    ::unlink(rewritten.c_str());
    throw Error(str("cannot replace the metrics log ", path_, ": ", std::strerror(saved)));
  }
  // The open file is the old log, now unlinked: appends go to the new one.
  std::fclose(file_);
  file_ = std::fopen(path_.c_str(), "a");
  SONATA_CHECK(file_ != nullptr, "cannot open the metrics log ", path_, ": ", std::strerror(errno));
}

}  // namespace sonata
