#include "engine/io/safetensors_header.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace sonata::safetensors_header {
namespace {

using json = nlohmann::json;

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

}  // namespace

uint64_t read_length(const uint8_t* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

Parsed parse(const char* text, size_t size, uint64_t payload_bytes, const std::string& source) {
  json header;
  try {
    header = json::parse(text, text + size);
  } catch (const json::exception& e) {
    throw Error(str(source, ": the header is not valid JSON (", e.what(), ")"));
  }
  if (!header.is_object()) throw Error(str(source, ": the header is not a JSON object"));

  Parsed parsed;
  std::vector<Entry>& entries = parsed.entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& key = it.key();
    const json& value = it.value();
    if (key == "__metadata__") {
      if (!value.is_object()) throw Error(str(source, ": __metadata__ is not an object"));
      for (auto m = value.begin(); m != value.end(); ++m) {
        if (!m.value().is_string())
          throw Error(str(source, ": metadata '", m.key(), "' is not a string"));
        parsed.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const auto where = str(source, ": tensor '", key, "'");
    if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") ||
        !value.contains("data_offsets") || !value["dtype"].is_string() ||
        !value["shape"].is_array() || !value["data_offsets"].is_array() ||
        value["data_offsets"].size() != 2)
      throw Error(str(where, " needs a string dtype, a shape list and two data_offsets"));
    Entry entry{{key, parse_dtype_name(value["dtype"].get<std::string>(), source, key), {}}, 0, 0};
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
      entry.spec.shape.push_back(int64_t(extent));
    }
    const json& offsets = value["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      throw Error(str(where, " has data_offsets that are not byte positions"));
    entry.begin = offsets[0].get<uint64_t>();
    entry.end = offsets[1].get<uint64_t>();
    if (entry.begin > entry.end || entry.end > payload_bytes)
      throw Error(str(where, " has data_offsets [", entry.begin, ", ", entry.end, "] outside the ",
                      payload_bytes, " bytes of data"));
    const uint64_t expected = numel * dtype_size(entry.spec.dtype);
    if (entry.end - entry.begin != expected)
      throw Error(str(where, " holds ", entry.end - entry.begin, " bytes but its shape ",
                      shape_str(entry.spec.shape), " of ", dtype_name(entry.spec.dtype), " needs ",
                      expected));
    entries.push_back(std::move(entry));
  }
  // An empty tensor written just before another starts where it starts: first.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 1; i < entries.size(); ++i)
    if (entries[i].begin < entries[i - 1].end)
      throw Error(str(source, ": tensors '", entries[i - 1].spec.name, "' and '",
                      entries[i].spec.name, "' overlap in the file"));
  return parsed;
}

std::string compose(const std::vector<TensorSpec>& specs, const Metadata& metadata,
                    const std::string& path) {
  json header = json::object();
  header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorSpec& spec : specs) {
    SONATA_CHECK(spec.name != "__metadata__", "save_safetensors '", path,
                 "': a tensor may not be named __metadata__");
    SONATA_CHECK(!header.contains(spec.name), "save_safetensors '", path, "': tensor name '",
                 spec.name, "' appears twice");
    uint64_t numel = 1;
    for (const int64_t extent : spec.shape) numel *= uint64_t(extent);
    const uint64_t bytes = numel * dtype_size(spec.dtype);
    header[spec.name] = {{"dtype", safetensors_dtype(spec.dtype)},
                         {"shape", spec.shape},
                         {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  return text;
}

}  // namespace sonata::safetensors_header
