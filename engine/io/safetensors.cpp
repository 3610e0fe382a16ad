#include "engine/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "engine/io/file_bytes.h"
#include "engine/io/safetensors_checksum.h"
#include "engine/io/safetensors_header.h"

namespace sonata {

namespace checksum = safetensors_checksum;

SafetensorsContents parse_safetensors(const uint8_t* data, size_t size, const std::string& source) {
  if (size < 8) throw Error(str(source, ": not a safetensors file (", size, " bytes, no header)"));
  const uint64_t header_bytes = safetensors_header::read_length(data);
  if (header_bytes > size - 8 || header_bytes > safetensors_header::kMaxHeaderBytes)
    throw Error(str(source, ": header length ", header_bytes, " runs past the end of the file (",
                    size, " bytes): truncated or not safetensors"));
  const uint8_t* payload = data + 8 + header_bytes;
  safetensors_header::Parsed parsed = safetensors_header::parse(
      reinterpret_cast<const char*>(data + 8), header_bytes, size - 8 - header_bytes, source);
  SafetensorsContents contents;
  contents.metadata = std::move(parsed.metadata);
  const auto stored_checksum = contents.metadata.find(checksum::kKey);
  if (stored_checksum != contents.metadata.end()) {
    const char* header_text = reinterpret_cast<const char*>(data + 8);
    const size_t digits_at = checksum::digits_offset(header_text, header_bytes, source);
    checksum::FileChecksum computed(8 + digits_at);
    computed.update(data, size);
    checksum::check_checksum(std::string(header_text + digits_at, checksum::kDigits),
                             computed.value(), source);
    contents.metadata.erase(stored_checksum);  // the file's, not the caller's
  }
  for (const safetensors_header::Entry& entry : parsed.entries) {
    // Any other byte in a bool would be undefined behaviour wherever the tensor is read.
    if (entry.spec.dtype == DType::boolean &&
        std::any_of(payload + entry.begin, payload + entry.end, [](uint8_t b) { return b > 1; }))
      throw Error(
          str(source, ": tensor '", entry.spec.name, "' holds BOOL bytes other than 0 and 1"));
    Tensor t = empty(entry.spec.shape, TensorOptions{}.with(entry.spec.dtype));
    if (entry.end > entry.begin)
      std::memcpy(t.data_ptr(), payload + entry.begin, entry.end - entry.begin);
    contents.tensors.emplace_back(entry.spec.name, t);
  }
  return contents;
}

SafetensorsContents load_safetensors(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  return parse_safetensors(bytes.data(), bytes.size(), path);
}

}  // namespace sonata
