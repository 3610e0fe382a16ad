// read_safetensors_header and load_safetensors_tensors (engine/io/safetensors.h): part of a
// file read from disk, the rest streamed past through the checksum, so that a process that
// needs some of a checkpoint's tensors never holds the others.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>

#include "base/error.h"
#include "engine/io/safetensors.h"
#include "engine/io/safetensors_checksum.h"
#include "engine/io/safetensors_header.h"

namespace sonata {
namespace {

namespace checksum = safetensors_checksum;

constexpr size_t kChunkBytes = 4u << 20;

// A file opened at the start of its data, its header parsed.
struct OpenFile {
  std::ifstream in;
  uint8_t length[8] = {};
  std::string text;  // the header's JSON
  safetensors_header::Parsed header;
  uint64_t payload_bytes = 0;
};

void open_file(const std::string& path, OpenFile& file) {
  file.in.open(path, std::ios::binary | std::ios::ate);
  if (!file.in) throw Error(str("cannot open '", path, "': ", std::strerror(errno)));
  const uint64_t size = uint64_t(std::max<std::streamoff>(file.in.tellg(), 0));
  file.in.seekg(0);
  if (size < 8 || !file.in.read(reinterpret_cast<char*>(file.length), 8))
    throw Error(str(path, ": not a safetensors file (", size, " bytes, no header)"));
  const uint64_t header_bytes = safetensors_header::read_length(file.length);
  if (header_bytes > size - 8 || header_bytes > safetensors_header::kMaxHeaderBytes)
    throw Error(str(path, ": header length ", header_bytes, " runs past the end of the file (",
                    size, " bytes): truncated or not safetensors"));
  file.text.assign(header_bytes, '\0');
  if (!file.in.read(file.text.data(), std::streamsize(header_bytes)))
    throw Error(str("cannot read '", path, "'"));
  file.payload_bytes = size - 8 - header_bytes;
  file.header =
      safetensors_header::parse(file.text.data(), file.text.size(), file.payload_bytes, path);
}

void read_exactly(std::ifstream& in, void* into, uint64_t bytes, const std::string& path) {
  if (bytes > 0 && !in.read(static_cast<char*>(into), std::streamsize(bytes)))
    throw Error(str("cannot read '", path, "': it ended early"));
}

}  // namespace

SafetensorsHeader read_safetensors_header(const std::string& path) {
  OpenFile file;
  open_file(path, file);
  SafetensorsHeader header;
  for (const safetensors_header::Entry& entry : file.header.entries)
    header.tensors.push_back(entry.spec);
  header.metadata = std::move(file.header.metadata);
  header.metadata.erase(checksum::kKey);
  return header;
}

SafetensorsContents load_safetensors_tensors(const std::string& path,
                                             const std::vector<std::string>& names,
                                             const SafetensorsRows& rows) {
  OpenFile file;
  open_file(path, file);
  std::set<std::string> wanted(names.begin(), names.end());
  std::set<std::string> present;
  for (const safetensors_header::Entry& entry : file.header.entries)
    present.insert(entry.spec.name);
  for (const std::string& name : names)
    SONATA_CHECK(present.count(name), path, ": there is no tensor '", name, "' in the file (",
                 present.size(), " tensors)");

  SafetensorsContents contents;
  contents.metadata = std::move(file.header.metadata);
  const auto stored = contents.metadata.find(checksum::kKey);
  const bool checked = stored != contents.metadata.end();
  std::optional<checksum::FileChecksum> computed;
  if (checked) {
    computed.emplace(8 + checksum::digits_offset(file.text.data(), file.text.size(), path));
    computed->update(file.length, 8);
    computed->update(file.text.data(), file.text.size());
  }
  // The data up to `to`, through the checksum when there is one, else skipped.
  uint64_t at = 0;
  std::vector<char> chunk;
  auto pass_to = [&](uint64_t to) {
    if (!checked) {
      file.in.seekg(std::streamoff(to - at), std::ios::cur);
      at = to;
      return;
    }
    chunk.resize(size_t(std::min<uint64_t>(kChunkBytes, file.payload_bytes)));
    while (at < to) {
      const size_t n = size_t(std::min<uint64_t>(to - at, chunk.size()));
      read_exactly(file.in, chunk.data(), n, path);
      computed->update(chunk.data(), n);
      at += n;
    }
  };
  for (const safetensors_header::Entry& entry : file.header.entries) {
    if (!wanted.count(entry.spec.name)) continue;
    // Rows [first, second) of a C-order tensor are one run of bytes.
    Shape shape = entry.spec.shape;
    uint64_t skip = 0, bytes = entry.end - entry.begin;
    if (const auto range = rows.find(entry.spec.name); range != rows.end()) {
      const auto [first, last] = range->second;
      SONATA_CHECK(!shape.empty() && 0 <= first && first <= last && last <= shape[0], path,
                   ": rows [", first, ", ", last, ") of tensor '", entry.spec.name,
                   "' lie outside its shape ", shape_str(shape));
      const uint64_t row_bytes = bytes / uint64_t(std::max<int64_t>(shape[0], 1));
      skip = uint64_t(first) * row_bytes;
      bytes = uint64_t(last - first) * row_bytes;
      shape[0] = last - first;
    }
    Tensor tensor = empty(shape, TensorOptions{}.with(entry.spec.dtype));
    if (bytes > 0) {  // an empty tensor's offset may lie anywhere; it moves nothing
      pass_to(entry.begin + skip);
      read_exactly(file.in, tensor.data_ptr(), bytes, path);
      if (checked) computed->update(tensor.data_ptr(), size_t(bytes));
      at = entry.begin + skip + bytes;
    }
    const auto* data = static_cast<const uint8_t*>(tensor.data_ptr());
    // Any other byte in a bool would be undefined behaviour wherever the tensor is read.
    if (entry.spec.dtype == DType::boolean &&
        std::any_of(data, data + bytes, [](uint8_t b) { return b > 1; }))
      throw Error(
          str(path, ": tensor '", entry.spec.name, "' holds BOOL bytes other than 0 and 1"));
    contents.tensors.emplace_back(entry.spec.name, tensor);
  }
  if (checked) {
    pass_to(file.payload_bytes);
    const size_t digits_at = checksum::digits_offset(file.text.data(), file.text.size(), path);
    checksum::check_checksum(file.text.substr(digits_at, checksum::kDigits), computed->value(),
                             path);
    contents.metadata.erase(stored);
  }
  return contents;
}

}  // namespace sonata
