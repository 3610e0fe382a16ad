#include "train/state/manifest_fingerprint.h"

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "engine/io/crc32c.h"

namespace sonata {

std::string manifest_fingerprint(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return {};
  try {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", crc32c_extend(0, bytes.data(), bytes.size()));
    return str(bytes.size(), " bytes, CRC-32C ", hex);
  } catch (const std::exception&) {
    return {};  // unreadable: the task that reads it says why
  }
}

std::string manifest_change(const std::map<std::string, std::string>& texts,
                            const std::string& manifest, const std::string& now,
                            const std::string& checkpoint, bool mid_epoch) {
  const auto recorded = texts.find(kTrainManifestKey);
  const auto path = texts.find(kTrainManifestPathKey);
  if (recorded == texts.end() || path == texts.end() || path->second != manifest ||
      recorded->second == now)
    return {};
  const std::string change =
      str("--train '", manifest, "' changed since ", checkpoint, " was written (", recorded->second,
          " then, ", now.empty() ? std::string("unreadable") : now, " now)");
  if (!mid_epoch) return change + ": its new items are trained on from this epoch on";
  throw Error(str(change,
                  ": the rest of this epoch was drawn from its old items; put the manifest "
                  "back as it was, or start a new run from these weights with --init-from ",
                  checkpoint, "/model.safetensors and a new --checkpoint-dir"));
}

}  // namespace sonata
