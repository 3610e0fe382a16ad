#include "engine/io/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/error.h"
#include "engine/io/file_bytes.h"
#include "engine/io/safetensors_checksum.h"

namespace sonata {
namespace {

using json = nlohmann::json;
namespace checksum = safetensors_checksum;

// Header lengths past this are refused before anything is allocated for them.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kDTypeNames[] = {
    {"F16", DType::f16}, {"BF16", DType::bf16}, {"F32", DType::f32}, {"F64", DType::f64},
    {"I32", DType::i32}, {"I64", DType::i64},   {"U8", DType::u8},   {"BOOL", DType::boolean}};

const char* safetensors_dtype(DType dtype) {
  for (const DTypeName& entry : kDTypeNames)
    if (entry.dtype == dtype) return entry.name;
  SONATA_UNREACHABLE("safetensors dtype");
}

DType parse_dtype_name(const std::string& name, const std::string& source, const std::string& key) {
  for (const DTypeName& entry : kDTypeNames)
    if (name == entry.name) return entry.dtype;
  throw Error(str(source, ": tensor '", key, "' has dtype '", name,
                  "', which sonata does not read (F16, BF16, F32, F64, I32, I64, U8, BOOL)"));
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

}  // namespace

SafetensorsContents parse_safetensors(const uint8_t* data, size_t size, const std::string& source) {
  if (size < 8) throw Error(str(source, ": not a safetensors file (", size, " bytes, no header)"));
  const uint64_t header_bytes = read_u64_le(data);
  if (header_bytes > size - 8 || header_bytes > kMaxHeaderBytes)
    throw Error(str(source, ": header length ", header_bytes, " runs past the end of the file (",
                    size, " bytes): truncated or not safetensors"));
  json header;
  try {
    header = json::parse(data + 8, data + 8 + header_bytes);
  } catch (const json::exception& e) {
    throw Error(str(source, ": the header is not valid JSON (", e.what(), ")"));
  }
  if (!header.is_object()) throw Error(str(source, ": the header is not a JSON object"));

  const uint8_t* payload = data + 8 + header_bytes;
  const uint64_t payload_bytes = size - 8 - header_bytes;
  SafetensorsContents contents;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& key = it.key();
    const json& value = it.value();
    if (key == "__metadata__") {
      if (!value.is_object()) throw Error(str(source, ": __metadata__ is not an object"));
      for (auto m = value.begin(); m != value.end(); ++m) {
        if (!m.value().is_string())
          throw Error(str(source, ": metadata '", m.key(), "' is not a string"));
        contents.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const auto where = str(source, ": tensor '", key, "'");
    if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") ||
        !value.contains("data_offsets") || !value["dtype"].is_string() ||
        !value["shape"].is_array() || !value["data_offsets"].is_array() ||
        value["data_offsets"].size() != 2)
      throw Error(str(where, " needs a string dtype, a shape list and two data_offsets"));
    Entry entry{key, parse_dtype_name(value["dtype"].get<std::string>(), source, key), {}, 0, 0};
    uint64_t numel = 1, span = 1;
    for (const json& dim : value["shape"]) {
      if (!dim.is_number_unsigned())
        throw Error(str(where, " has a shape entry that is not a size"));
      const uint64_t extent = dim.get<uint64_t>();
      if (extent > uint64_t(std::numeric_limits<int64_t>::max()) ||
          (extent != 0 && numel > payload_bytes / extent))
        throw Error(str(where, " has a shape larger than the file"));
      numel *= extent;
      // An empty tensor passes the size check whatever its other sizes; its strides (which
      // count a 0 as 1) must still fit in int64.
      if (extent > 1 && span > uint64_t(std::numeric_limits<int64_t>::max()) / extent)
        throw Error(str(where, " has an empty shape whose other sizes overflow int64"));
      span *= std::max<uint64_t>(extent, 1);
      entry.shape.push_back(int64_t(extent));
    }
    const json& offsets = value["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      throw Error(str(where, " has data_offsets that are not byte positions"));
    entry.begin = offsets[0].get<uint64_t>();
    entry.end = offsets[1].get<uint64_t>();
    if (entry.begin > entry.end || entry.end > payload_bytes)
      throw Error(str(where, " has data_offsets [", entry.begin, ", ", entry.end, "] outside the ",
                      payload_bytes, " bytes of data"));
    const uint64_t expected = numel * dtype_size(entry.dtype);
    if (entry.end - entry.begin != expected)
      throw Error(str(where, " holds ", entry.end - entry.begin, " bytes but its shape ",
                      shape_str(entry.shape), " of ", dtype_name(entry.dtype), " needs ",
                      expected));
    entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < entries.size(); ++i)
    if (entries[i].begin < entries[i - 1].end)
      throw Error(str(source, ": tensors '", entries[i - 1].name, "' and '", entries[i].name,
                      "' overlap in the file"));
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
  for (const Entry& entry : entries) {
    // Any other byte in a bool would be undefined behaviour wherever the tensor is read.
    if (entry.dtype == DType::boolean &&
        std::any_of(payload + entry.begin, payload + entry.end, [](uint8_t b) { return b > 1; }))
      throw Error(str(source, ": tensor '", entry.name, "' holds BOOL bytes other than 0 and 1"));
    Tensor t = empty(entry.shape, TensorOptions{}.with(entry.dtype));
    if (entry.end > entry.begin)
      std::memcpy(t.data_ptr(), payload + entry.begin, entry.end - entry.begin);
    contents.tensors.emplace_back(entry.name, t);
  }
  return contents;
}

SafetensorsContents load_safetensors(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  return parse_safetensors(bytes.data(), bytes.size(), path);
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata) {
  SONATA_CHECK(!metadata.count(checksum::kKey), "save_safetensors '", path, "': the metadata key '",
               checksum::kKey, "' is the file's checksum, which save_safetensors writes itself");
  Metadata with_checksum = metadata;
  with_checksum[checksum::kKey] = checksum::kPlaceholder;
  json header = json::object();
  header["__metadata__"] = with_checksum;
  std::vector<Tensor> host;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    SONATA_CHECK(name != "__metadata__", "a tensor may not be named __metadata__");
    SONATA_CHECK(!header.contains(name), "tensor name '", name, "' appears twice");
    Tensor h = tensor.detach().to(Device::cpu()).contiguous();
    const uint64_t bytes = uint64_t(h.numel()) * dtype_size(h.dtype());
    header[name] = {{"dtype", safetensors_dtype(h.dtype())},
                    {"shape", h.shape()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    host.push_back(h);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  const size_t digits_at = checksum::digits_offset(text.data(), text.size(), path);
  checksum::FileChecksum file_checksum(8 + digits_at);
  file_checksum.update(length, 8);
  file_checksum.update(text.data(), text.size());
  for (const Tensor& h : host)
    file_checksum.update(h.data_ptr(), size_t(h.numel()) * dtype_size(h.dtype()));
  text.replace(digits_at, checksum::kDigits, checksum::format_checksum(file_checksum.value()));

  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(str("cannot write '", temporary, "': ", std::strerror(errno)));
  auto write_all = [&](const void* p, size_t n) {
    const char* at = static_cast<const char*>(p);
    while (n > 0) {
      const ssize_t written = ::write(fd, at, n);
      if (written < 0) {
        const int saved = errno;
        ::close(fd);
        ::unlink(temporary.c_str());
        throw Error(str("writing '", temporary, "' failed: ", std::strerror(saved)));
      }
      at += written;
      n -= size_t(written);
    }
  };
  write_all(length, 8);
  write_all(text.data(), text.size());
  for (const Tensor& h : host) write_all(h.data_ptr(), size_t(h.numel()) * dtype_size(h.dtype()));
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(temporary.c_str());
    throw Error(str("flushing '", temporary, "' failed: ", std::strerror(errno)));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
    throw Error(str("renaming '", temporary, "' to '", path, "' failed: ", std::strerror(errno)));
  }
}

}  // namespace sonata
