// check_safetensors_file (engine/io/safetensors.h): a file's header, sizes and checksum
// checked by streaming it, so that checking a checkpoint costs no memory for its tensors.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/error.h"
#include "engine/io/safetensors.h"
#include "engine/io/safetensors_checksum.h"

namespace sonata {
namespace {

using json = nlohmann::json;
namespace checksum = safetensors_checksum;

// As engine/io/safetensors.cpp: no header of ours comes near.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;
constexpr size_t kChunkBytes = 4u << 20;

}  // namespace

Metadata check_safetensors_file(const std::string& path, SafetensorsCheck check) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(str("cannot open '", path, "': ", std::strerror(errno)));
  const uint64_t size = uint64_t(std::max<std::streamoff>(in.tellg(), 0));
  in.seekg(0);
  uint8_t length_bytes[8] = {};
  if (size < 8 || !in.read(reinterpret_cast<char*>(length_bytes), 8))
    throw Error(str(path, ": ", size, " bytes, too short for a safetensors header"));
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | length_bytes[i];
  if (header_bytes > size - 8 || header_bytes > kMaxHeaderBytes)
    throw Error(str(path, ": header length ", header_bytes, " runs past the end of the file (",
                    size, " bytes): truncated"));
  std::string text(header_bytes, '\0');
  if (!in.read(text.data(), std::streamsize(header_bytes)))
    throw Error(str("cannot read '", path, "'"));
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(str(path, ": the header is not valid JSON (", e.what(), ")"));
  }
  if (!header.is_object()) throw Error(str(path, ": the header is not a JSON object"));
  Metadata metadata;
  uint64_t data_end = 0;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) throw Error(str(path, ": __metadata__ is not an object"));
      for (auto m = it.value().begin(); m != it.value().end(); ++m)
        if (m.value().is_string()) metadata[m.key()] = m.value().get<std::string>();
      continue;
    }
    const json& offsets = it.value().is_object() && it.value().contains("data_offsets")
                              ? it.value()["data_offsets"]
                              : json();
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[1].is_number_unsigned())
      throw Error(str(path, ": tensor '", it.key(), "' has no valid data_offsets"));
    data_end = std::max(data_end, offsets[1].get<uint64_t>());
  }
  if (size - 8 - header_bytes != data_end)
    throw Error(str(path, ": the header describes ", data_end, " bytes of data but the file holds ",
                    size - 8 - header_bytes, ": truncated or overwritten"));

  const auto stored = metadata.find(checksum::kKey);
  if (stored == metadata.end()) return metadata;
  if (check == SafetensorsCheck::checksum) {
    const size_t digits_at = checksum::digits_offset(text.data(), text.size(), path);
    checksum::FileChecksum computed(8 + digits_at);
    computed.update(length_bytes, 8);
    computed.update(text.data(), text.size());
    std::vector<char> chunk(size_t(std::min<uint64_t>(kChunkBytes, data_end)));
    for (uint64_t left = data_end; left > 0;) {
      const size_t n = size_t(std::min<uint64_t>(left, chunk.size()));
      if (!in.read(chunk.data(), std::streamsize(n))) throw Error(str("cannot read '", path, "'"));
      computed.update(chunk.data(), n);
      left -= n;
    }
    checksum::check_checksum(stored->second, computed.value(), path);
  }
  metadata.erase(stored);
  return metadata;
}

std::string stored_safetensors_checksum(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str("cannot open '", path, "': ", std::strerror(errno)));
  uint8_t length_bytes[8] = {};
  if (!in.read(reinterpret_cast<char*>(length_bytes), 8))
    throw Error(str(path, ": too short for a safetensors header"));
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | length_bytes[i];
  if (header_bytes > kMaxHeaderBytes)
    throw Error(str(path, ": header length ", header_bytes, " is not a safetensors header's"));
  std::string text(header_bytes, '\0');
  if (!in.read(text.data(), std::streamsize(header_bytes)))
    throw Error(str(path, ": the header runs past the end of the file: truncated"));
  const json header = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object() || !header.contains("__metadata__")) return "";
  const json& metadata = header["__metadata__"];
  if (!metadata.is_object() || !metadata.contains(checksum::kKey)) return "";
  const json& digits = metadata[checksum::kKey];
  return digits.is_string() ? digits.get<std::string>() : "";
}

}  // namespace sonata
