#include "engine/checkpoint/checkpoint_format.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace sonata::checkpoint_format {
namespace {

constexpr char kScalarPrefix[] = "scalar.";
constexpr char kOptimizerPrefix[] = "optimizer.";
constexpr char kTextPrefix[] = "text.";
// As engine/io/safetensors.cpp: no header of ours comes near.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

std::string in_folder(const std::string& folder, const char* file) {
  return (fs::path(folder) / file).string();
}

bool strip_prefix(const std::string& key, const char* prefix, std::string* rest) {
  const size_t n = std::strlen(prefix);
  if (key.compare(0, n, prefix) != 0) return false;
  *rest = key.substr(n);
  return true;
}

double parse_double(const std::string& text, const std::string& path, const std::string& key) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  // ERANGE on a subnormal still returns the exact value; only the empty or partial parse is bad.
  if (text.empty() || end != text.c_str() + text.size())
    throw Error(str(path, ": metadata '", key, "' = '", text, "' is not a number"));
  return value;
}

SafetensorsContents load_file(const std::string& folder, const char* file) {
  const std::string path = in_folder(folder, file);
  try {
    return load_safetensors(path);
  } catch (const Error& e) {
    throw Error(str("checkpoint '", folder, "' is unreadable: ", e.what()));
  }
}

}  // namespace

std::string format_double(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

void write_step_folder(const std::string& folder, const TrainingState& state, int64_t step,
                       std::optional<double> metric) {
  Metadata metadata{{"format", kFormat}, {"step", std::to_string(step)}};
  if (metric) metadata["metric"] = format_double(*metric);
  for (const auto& [name, value] : state.scalars)
    metadata[kScalarPrefix + name] = format_double(value);
  for (const auto& [name, value] : state.optimizer.scalars)
    metadata[kOptimizerPrefix + name] = format_double(value);
  for (const auto& [name, text] : state.texts) metadata[kTextPrefix + name] = text;
  save_safetensors(in_folder(folder, kModelFile), state.model);
  save_safetensors(in_folder(folder, kStateFile), state.optimizer.tensors, metadata);
}

TrainingState read_step_folder(const std::string& folder) {
  TrainingState state;
  state.model = load_file(folder, kModelFile).tensors;
  SafetensorsContents contents = load_file(folder, kStateFile);
  const std::string path = in_folder(folder, kStateFile);
  const auto format = contents.metadata.find("format");
  if (format == contents.metadata.end())
    throw Error(str("checkpoint '", folder, "' is unreadable: ", path,
                    " has no 'format' metadata (not a sonata checkpoint)"));
  if (format->second != kFormat)
    throw Error(str("checkpoint '", folder, "' is unreadable: ", path, " is of format '",
                    format->second, "', this build reads '", kFormat, "'"));
  state.optimizer.tensors = std::move(contents.tensors);
  for (const auto& [key, value] : contents.metadata) {
    std::string name;
    if (strip_prefix(key, kScalarPrefix, &name)) {
      state.scalars[name] = parse_double(value, path, key);
    } else if (strip_prefix(key, kOptimizerPrefix, &name)) {
      state.optimizer.scalars[name] = parse_double(value, path, key);
    } else if (strip_prefix(key, kTextPrefix, &name)) {
      state.texts[name] = value;
    }
  }
  return state;
}

Metadata read_header_metadata(const std::string& path) {
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
  return metadata;
}

void check_step_folder_whole(const std::string& folder) {
  read_header_metadata(in_folder(folder, kModelFile));
  const Metadata metadata = read_header_metadata(in_folder(folder, kStateFile));
  const auto format = metadata.find("format");
  if (format == metadata.end() || format->second != kFormat)
    throw Error(str(in_folder(folder, kStateFile), ": not of format '", kFormat, "'"));
}

std::optional<double> saved_metric(const std::string& folder) {
  try {
    const std::string path = in_folder(folder, kStateFile);
    const Metadata metadata = read_header_metadata(path);
    const auto metric = metadata.find("metric");
    if (metric == metadata.end()) return std::nullopt;
    return parse_double(metric->second, path, "metric");
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace sonata::checkpoint_format
