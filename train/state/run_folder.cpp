#include "train/state/run_folder.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/run_identity.h"

namespace fs = std::filesystem;

namespace sonata {
namespace {

constexpr char kPreviousRun[] = "previous-run-";

// Whether `--resume` continues the run of `folder`: auto, the folder itself or one of its
// step folders (by any path to them).
bool continues_folder(const TrainerOptions& options, const std::string& folder) {
  const std::string& resume = options.resume;
  if (resume.empty()) return false;
  if (options.resumes_newest()) return true;
  std::error_code error;
  const fs::path own = fs::weakly_canonical(folder, error);
  fs::path named = fs::weakly_canonical(resume, error);
  if (named.filename().empty()) named = named.parent_path();
  return named == own || named.parent_path() == own;
}

// The newest step of the folder's step folders (as their names say).
std::string newest_step_text(const std::string& folder) {
  std::string newest;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().filename().string().rfind("step-", 0) == 0)
      newest = std::max(newest, entry.path().filename().string());
  return newest;
}

// Moves every entry of `folder` but the lock file and earlier runs set aside into the first
// free `previous-run-<N>/`; returns its path.
std::string move_run_aside(const std::string& folder) {
  std::error_code error;
  std::string aside;
  for (int n = 1; aside.empty() || fs::exists(fs::symlink_status(aside, error)); ++n)
    aside = (fs::path(folder) / str(kPreviousRun, n)).string();
  SONATA_CHECK(fs::create_directory(aside, error), "--overwrite: cannot create '", aside,
               "': ", error.message());
  std::vector<fs::path> moved;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name == CheckpointDirLock::kFileName || name.rfind(kPreviousRun, 0) == 0) continue;
    moved.push_back(entry.path());
  }
  for (const fs::path& path : moved) {
    fs::rename(path, fs::path(aside) / path.filename(), error);
    SONATA_CHECK(!error, "--overwrite: cannot move '", path.string(), "' aside into '", aside,
                 "': ", error.message());
  }
  return aside;
}

}  // namespace

std::unique_ptr<CheckpointDirLock> claim_checkpoint_dir(const TrainerOptions& options) {
  const std::string& folder = options.checkpoint_dir;
  auto lock = std::make_unique<CheckpointDirLock>(folder);
  const bool holds_run = has_step_folders(folder);
  if (holds_run && !continues_folder(options, folder)) {
    if (!options.overwrite)
      throw Error(
          str("--checkpoint-dir '", folder, "' holds another run (its newest checkpoint is ",
              newest_step_text(folder), "), which this run would overwrite: continue it ",
              "with --resume auto, give this run a new --checkpoint-dir, or add ",
              "--overwrite to move the old run aside into '", folder, "/", kPreviousRun, "<N>'"));
    std::fprintf(stderr, "--overwrite: moved the run that was in '%s' aside into '%s'\n",
                 folder.c_str(), move_run_aside(folder).c_str());
  }
  // A run that starts here afresh (nothing to resume in the folder): a new identity.
  if (!has_step_folders(folder)) write_run_id(folder, new_run_id());
  return lock;
}

}  // namespace sonata
