#include "tools/trainer/metrics_log.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace sonata {

MetricsLog::MetricsLog(const std::string& path, bool append) : path_(path) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  SONATA_CHECK(file_ != nullptr, "cannot open the metrics log ", path, ": ", std::strerror(errno));
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

}  // namespace sonata
