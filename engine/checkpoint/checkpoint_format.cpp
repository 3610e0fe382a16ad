#include "engine/checkpoint/checkpoint_format.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <utility>
#include <vector>

#include "base/error.h"
#include "engine/checkpoint/checkpoint_files.h"
#include "engine/checkpoint/run_identity.h"

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

// `read` of the file, its errors naming the checkpoint.
template <typename Read>
auto read_file(const std::string& folder, const char* file, Read read) {
  const std::string path = in_folder(folder, file);
  try {
    return read(path);
  } catch (const Error& e) {
    throw Error(str("checkpoint '", folder, "' is unreadable: ", e.what()));
  }
}

SafetensorsContents load_file(const std::string& folder, const char* file) {
  return read_file(folder, file, [](const std::string& path) { return load_safetensors(path); });
}

// The names of the file's tensors that `selected` picks.
std::vector<std::string> selected_names(const std::vector<TensorSpec>& specs,
                                        const std::function<bool(const std::string&)>& selected) {
  std::vector<std::string> names;
  for (const TensorSpec& spec : specs)
    if (selected && selected(spec.name)) names.push_back(spec.name);
  return names;
}

// The selected tensors of one file of the step folder, and what every tensor of it is.
SafetensorsContents load_selected(const std::string& folder, const char* file,
                                  const std::function<bool(const std::string&)>& selected,
                                  const CheckpointSelection::RowsOf& rows_of,
                                  std::vector<TensorSpec>* specs) {
  return read_file(folder, file, [&](const std::string& path) {
    *specs = read_safetensors_header(path).tensors;
    const std::vector<std::string> names = selected_names(*specs, selected);
    SafetensorsRows rows;
    if (rows_of)
      for (const std::string& name : names)
        if (const auto range = rows_of(name)) rows[name] = *range;
    return load_safetensors_tensors(path, names, rows);
  });
}

// The state file's metadata into `state`: the format checked, the scalars and texts parsed.
void read_state_metadata(const std::string& folder, const Metadata& metadata,
                         TrainingState& state) {
  const std::string path = in_folder(folder, kStateFile);
  const auto format = metadata.find("format");
  if (format == metadata.end())
    throw Error(str("checkpoint '", folder, "' is unreadable: ", path,
                    " has no 'format' metadata (not a sonata checkpoint)"));
  if (format->second != kFormat)
    throw Error(str("checkpoint '", folder, "' is unreadable: ", path, " is of format '",
                    format->second, "', this build reads '", kFormat, "'"));
  for (const auto& [key, value] : metadata) {
    std::string name;
    if (strip_prefix(key, kScalarPrefix, &name)) {
      state.scalars[name] = parse_double(value, path, key);
    } else if (strip_prefix(key, kOptimizerPrefix, &name)) {
      state.optimizer.scalars[name] = parse_double(value, path, key);
    } else if (strip_prefix(key, kTextPrefix, &name)) {
      state.texts[name] = value;
    }
  }
}

// The files of a step folder belong together: the state records the model file's checksum,
// its step and its run (run_identity.h), and a file of sonata's own carries its checksum.
// Headers alone are read; the checksums themselves are verified by the readers.
void check_binding(const std::string& folder, const Metadata& state_metadata) {
  const std::string model = in_folder(folder, kModelFile), state = in_folder(folder, kStateFile);
  const std::string run = read_run_id(fs::path(folder).parent_path().string());
  const std::string model_digits = stored_safetensors_checksum(model);
  const std::string state_digits = stored_safetensors_checksum(state);
  const auto recorded = state_metadata.find(kModelChecksumKey);
  // Written before checksums, in a folder that no run of this build claims: loads unchecked.
  if (run.empty() && model_digits.empty() && state_digits.empty()) return;
  for (const auto& [path, digits] :
       {std::pair{&model, &model_digits}, std::pair{&state, &state_digits}})
    if (digits->empty())
      throw Error(str(*path, " carries no checksum (its metadata '",
                      "sonata.crc32c' was removed or renamed), and sonata loads none of its "
                      "own checkpoints unchecked (other weights load with --init-from)"));
  if (recorded == state_metadata.end()) {
    if (run.empty()) return;  // saved before the files were bound together
    throw Error(str(state, " does not record its model file's checksum"));
  }
  if (recorded->second != model_digits)
    throw Error(str(model, " is not the model file saved with ", state, " (its checksum is ",
                    model_digits, ", the state records ", recorded->second,
                    "): files of different checkpoints were mixed"));
  const auto step = state_metadata.find("step");
  const auto named = checkpoint_files::parse_step_folder_name(fs::path(folder).filename().string());
  if (named && (step == state_metadata.end() || step->second != std::to_string(*named)))
    throw Error(str(state, " holds step ",
                    step == state_metadata.end() ? std::string("(none)") : step->second,
                    ", not the folder's step ", *named));
  const auto saved_run = state_metadata.find(kRunKey);
  if (!run.empty() && (saved_run == state_metadata.end() || saved_run->second != run))
    throw Error(str(state, " was saved by run ",
                    saved_run == state_metadata.end() ? std::string("(none)") : saved_run->second,
                    ", and its folder holds run ", run, " (its ", kRunFile,
                    "): a checkpoint of another run"));
}

// check_binding, its error naming the checkpoint as the readers' errors do.
void check_binding_of_read(const std::string& folder, const Metadata& state_metadata) {
  try {
    check_binding(folder, state_metadata);
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

void write_step_folder(const std::string& folder, const TrainingStateSource& state, int64_t step,
                       std::optional<double> metric) {
  Metadata metadata{{"format", kFormat}, {"step", std::to_string(step)}};
  if (metric) metadata["metric"] = format_double(*metric);
  for (const auto& [name, value] : state.scalars)
    metadata[kScalarPrefix + name] = format_double(value);
  for (const auto& [name, value] : state.optimizer_scalars)
    metadata[kOptimizerPrefix + name] = format_double(value);
  for (const auto& [name, text] : state.texts) metadata[kTextPrefix + name] = text;
  // The model file first: the state records its checksum, and the run, binding them.
  const std::string model = in_folder(folder, kModelFile);
  save_safetensors_streamed(model, state.model);
  metadata[kModelChecksumKey] = stored_safetensors_checksum(model);
  const std::string run = read_run_id(fs::path(folder).parent_path().string());
  if (!run.empty()) metadata[kRunKey] = run;
  save_safetensors_streamed(in_folder(folder, kStateFile), state.optimizer_tensors, metadata);
}

TrainingState read_step_folder(const std::string& folder) {
  TrainingState state;
  state.model = load_file(folder, kModelFile).tensors;
  SafetensorsContents contents = load_file(folder, kStateFile);
  check_binding_of_read(folder, contents.metadata);
  read_state_metadata(folder, contents.metadata, state);
  state.optimizer.tensors = std::move(contents.tensors);
  return state;
}

PartialTrainingState read_step_folder_part(const std::string& folder,
                                           const CheckpointSelection& selection) {
  PartialTrainingState part;
  part.state.model =
      load_selected(folder, kModelFile, selection.model, selection.model_rows, &part.model_in_file)
          .tensors;
  std::vector<TensorSpec> optimizer_specs;
  SafetensorsContents contents = load_selected(folder, kStateFile, selection.optimizer,
                                               selection.optimizer_rows, &optimizer_specs);
  check_binding_of_read(folder, contents.metadata);
  read_state_metadata(folder, contents.metadata, part.state);
  part.state.optimizer.tensors = std::move(contents.tensors);
  return part;
}

namespace {

void check_files(const std::string& folder, SafetensorsCheck check) {
  check_safetensors_file(in_folder(folder, kModelFile), check);
  const Metadata metadata = check_safetensors_file(in_folder(folder, kStateFile), check);
  const auto format = metadata.find("format");
  if (format == metadata.end() || format->second != kFormat)
    throw Error(str(in_folder(folder, kStateFile), ": not of format '", kFormat, "'"));
  check_binding(folder, metadata);
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
