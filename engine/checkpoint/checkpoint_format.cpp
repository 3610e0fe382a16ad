#include "engine/checkpoint/checkpoint_format.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace fs = std::filesystem;

namespace sonata::checkpoint_format {
namespace {

constexpr char kScalarPrefix[] = "scalar.";
constexpr char kOptimizerPrefix[] = "optimizer.";
constexpr char kTextPrefix[] = "text.";

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

namespace {

void check_files(const std::string& folder, SafetensorsCheck check) {
  check_safetensors_file(in_folder(folder, kModelFile), check);
  const Metadata metadata = check_safetensors_file(in_folder(folder, kStateFile), check);
  const auto format = metadata.find("format");
  if (format == metadata.end() || format->second != kFormat)
    throw Error(str(in_folder(folder, kStateFile), ": not of format '", kFormat, "'"));
}

}  // namespace

void check_step_folder_whole(const std::string& folder) {
  check_files(folder, SafetensorsCheck::sizes);
}

void verify_step_folder(const std::string& folder) {
  try {
    check_files(folder, SafetensorsCheck::checksum);
  } catch (const Error& e) {
    throw Error(str("checkpoint '", folder, "' is unreadable: ", e.what()));
  }
}

std::optional<double> saved_metric(const std::string& folder) {
  try {
    const std::string path = in_folder(folder, kStateFile);
    const Metadata metadata = check_safetensors_file(path, SafetensorsCheck::sizes);
    const auto metric = metadata.find("metric");
    if (metric == metadata.end()) return std::nullopt;
    return parse_double(metric->second, path, "metric");
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace sonata::checkpoint_format
