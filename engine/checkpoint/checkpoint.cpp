#include "engine/checkpoint/checkpoint.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <utility>

#include "base/error.h"
#include "engine/checkpoint/checkpoint_files.h"
#include "engine/checkpoint/checkpoint_format.h"

namespace fs = std::filesystem;

namespace sonata {
namespace {

using namespace checkpoint_files;
using namespace checkpoint_format;

constexpr char kLatestLink[] = "latest";
constexpr char kBestLink[] = "best";

// A path as named, without a trailing separator, so that its last part is the folder.
fs::path folder_path(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p;
}

// `path` + ".damaged", or + ".damaged-2", -3, ...: the first name not taken. Not a step
// folder name, so never listed, loaded or pruned.
std::string damaged_name(const std::string& path) {
  std::error_code error;
  std::string aside = path + ".damaged";
  for (int n = 2; fs::exists(fs::symlink_status(aside, error)); ++n)
    aside = str(path, ".damaged-", n);
  return aside;
}

// `read` of the step folder `path` names, or of the newest step folder of the checkpoint
// directory `path` that reads (load_checkpoint in checkpoint.h says how).
template <typename Read>
auto read_newest(const std::string& path, CheckpointSource* source, Read read) {
  CheckpointSource ignored;
  if (!source) source = &ignored;
  *source = {};
  const fs::path folder = folder_path(path);
  std::error_code error;
  SONATA_CHECK(fs::is_directory(folder, error), "'", path,
               "' is not a folder (a checkpoint directory or one of its step folders)");
  const bool step_folder = parse_step_folder_name(folder.filename().string()).has_value() ||
                           fs::exists(folder / kModelFile, error) ||
                           fs::exists(folder / kStateFile, error);
  if (step_folder) {
    source->folder = folder.string();
    return read(folder.string());
  }

  const auto folders = list_step_folders(folder.string());
  SONATA_CHECK(!folders.empty(), "'", path, "' holds no checkpoint (no step-* folders)");
  for (auto it = folders.rbegin(); it != folders.rend(); ++it) {
    try {
      auto state = read(it->second);
      source->folder = it->second;
      return state;
    } catch (const Error& e) {
      const bool last = std::next(it) == folders.rend();
      std::fprintf(
          stderr, "sonata: %s; %s\n", e.what(),
          last ? "no older checkpoint to fall back to" : "falling back to the previous checkpoint");
      source->skipped.push_back(e.what());
    }
  }
  std::string failures;
  for (size_t i = 0; i < source->skipped.size(); ++i)
    failures += str("\n  ", i + 1, ". ", source->skipped[i]);
  throw Error(str("no checkpoint in '", path, "' loads (", folders.size(),
                  folders.size() == 1 ? " step folder" : " step folders",
                  ", each kept as it is):", failures));
}

}  // namespace

TrainingStateSource training_state_source(const TrainingState& state) {
  return {tensor_source(state.model), tensor_source(state.optimizer.tensors),
          state.optimizer.scalars, state.scalars, state.texts};
}

CheckpointManager::CheckpointManager(std::string directory, int64_t keep_last,
                                     std::string metric_mode)
    : directory_(std::move(directory)), keep_last_(keep_last), maximize_(metric_mode == "max") {
  SONATA_CHECK(metric_mode == "min" || metric_mode == "max", "CheckpointManager: metric mode '",
               metric_mode, "' is neither \"min\" nor \"max\"");
  SONATA_CHECK(keep_last >= 0, "CheckpointManager: keep_last ", keep_last,
               " is negative (0 keeps every checkpoint)");
  std::error_code error;
  fs::create_directories(directory_, error);
  SONATA_CHECK(fs::is_directory(directory_), "CheckpointManager: cannot create the folder '",
               directory_, "': ", error.message());
  remove_stale_temporaries(directory_);
  rescan_best();
}

bool CheckpointManager::better(double metric) const {
  if (!best_metric_) return metric == metric;  // a NaN is never best
  return maximize_ ? metric > *best_metric_ : metric < *best_metric_;
}

void CheckpointManager::rescan_best() {
  best_metric_.reset();
  best_step_ = -1;
  for (const auto& [step, path] : list_step_folders(directory_)) {
    const std::optional<double> metric = saved_metric(path);
    if (metric && better(*metric)) {
      best_metric_ = metric;
      best_step_ = step;
    }
  }
  std::error_code error;
  const fs::path link = fs::path(directory_) / kBestLink;
  if (best_step_ < 0) {
    fs::remove(link, error);
  } else if (fs::read_symlink(link, error) != step_folder_name(best_step_)) {
    replace_symlink(directory_, kBestLink, step_folder_name(best_step_));
  }
}

std::string CheckpointManager::save(const TrainingState& state, int64_t step,
                                    std::optional<double> metric) {
  return save(training_state_source(state), step, metric);
}

std::string CheckpointManager::save(const TrainingStateSource& state, int64_t step,
                                    std::optional<double> metric) {
  SONATA_CHECK(step >= 0, "CheckpointManager.save: step ", step, " is negative");
  const std::string name = step_folder_name(step);
  const std::string path = (fs::path(directory_) / name).string();
  const std::string temporary = temporary_path(directory_, name);
  std::error_code error;
  if (fs::is_directory(fs::symlink_status(path, error)) && !verifies(step, path)) {
    // What a damaged folder holds is kept for whoever wants to look at it.
    const std::string aside = damaged_name(path);
    if (std::rename(path.c_str(), aside.c_str()) != 0)
      throw Error(str("CheckpointManager.save: cannot move the damaged checkpoint '", path,
                      "' aside to '", aside, "': ", std::strerror(errno)));
    std::fprintf(stderr, "sonata: moved the damaged checkpoint '%s' aside to '%s'\n", path.c_str(),
                 aside.c_str());
  }
  fs::remove_all(temporary, error);  // an earlier save of this process that failed
  SONATA_CHECK(fs::create_directory(temporary, error), "CheckpointManager.save: cannot create '",
               temporary, "': ", error.message());
  try {
    write_step_folder(temporary, state, step, metric);
    fsync_directory(temporary);
    rename_into_place(temporary, path);
  } catch (...) {
    fs::remove_all(temporary, error);
    throw;
  }
  fsync_directory(directory_);
  verified_[step] = true;

  replace_symlink(directory_, kLatestLink, name);
  if (step == best_step_) {
    // The best folder was just replaced, and its metric with it.
    rescan_best();
  } else if (metric && better(*metric)) {
    best_metric_ = metric;
    best_step_ = step;
    replace_symlink(directory_, kBestLink, name);
  }
  prune(step);
  fsync_directory(directory_);
  return path;
}

std::string CheckpointManager::best_checkpoint() const {
  return best_step_ < 0 ? "" : (fs::path(directory_) / step_folder_name(best_step_)).string();
}

bool CheckpointManager::verifies(int64_t step, const std::string& path) {
  const auto known = verified_.find(step);
  if (known != verified_.end()) return known->second;
  bool good = true;
  try {
    verify_step_folder(path);
  } catch (const Error& e) {
    std::fprintf(stderr,
                 "sonata: %s; it stays as it is (never pruned, moved aside rather than "
                 "overwritten) and is not counted among the checkpoints kept\n",
                 e.what());
    good = false;
  }
  verified_[step] = good;
  return good;
}

void CheckpointManager::prune(int64_t saved_step) {
  if (keep_last_ == 0) return;
  const auto folders = list_step_folders(directory_);
  // Newest first: the first keep_last_ that verify stay, and so does every one that does not
  // (counting those would push good checkpoints out for damaged ones).
  int64_t kept = 0;
  for (auto it = folders.rbegin(); it != folders.rend(); ++it) {
    const auto& [step, path] = *it;
    if (!verifies(step, path)) continue;
    if (++kept <= keep_last_ || step == best_step_ || step == saved_step) continue;
    remove_step_folder(directory_, path);
    verified_.erase(step);
  }
}

TrainingState load_checkpoint(const std::string& path, CheckpointSource* source) {
  return read_newest(path, source, read_step_folder);
}

PartialTrainingState load_checkpoint_part(const std::string& path,
                                          const CheckpointSelection& selection,
                                          CheckpointSource* source) {
  return read_newest(path, source, [&](const std::string& folder) {
    return read_step_folder_part(folder, selection);
  });
}

bool has_step_folders(const std::string& directory) {
  return !list_step_folders(folder_path(directory).string()).empty();
}

std::string latest_checkpoint(const std::string& directory) {
  const auto folders = list_step_folders(folder_path(directory).string());
  for (auto it = folders.rbegin(); it != folders.rend(); ++it) {
    try {
      check_step_folder_whole(it->second);
      return it->second;
    } catch (const Error&) {
      // Not whole: an older one may be.
    }
  }
  return "";
}

}  // namespace sonata
