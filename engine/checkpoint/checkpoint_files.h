#pragma once
// The file-system side of checkpoints (engine/checkpoint/checkpoint.h): step folder names,
// listing, durable renames and symlinks, and the temporary folders a save writes into.
// Internal to engine/checkpoint/.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sonata::checkpoint_files {

// "step-000000000042"; steps past 12 digits keep all theirs.
std::string step_folder_name(int64_t step);
// The step of a "step-<digits>" name; nullopt for any other name.
std::optional<int64_t> parse_step_folder_name(const std::string& name);
// (step, path) of every real directory (not a symlink) named step-<digits> in `directory`,
// oldest first. Temporary folders and the latest / best links are not listed.
std::vector<std::pair<int64_t, std::string>> list_step_folders(const std::string& directory);

// ".<name>.tmp-<pid><suffix>" in `directory`: where this process writes before renaming.
std::string temporary_path(const std::string& directory, const std::string& name,
                           const std::string& suffix = "");
// Removes the temporary entries (".*.tmp-<pid>*") that processes other than this one left
// in `directory`.
void remove_stale_temporaries(const std::string& directory);

// fsync of a directory, so that the renames and creations in it survive a crash.
void fsync_directory(const std::string& path);
// Renames `from` to `to`; an existing directory `to` is swapped out atomically and removed.
void rename_into_place(const std::string& from, const std::string& to);
// Points the symlink `directory`/`name` at `target` (relative to `directory`) by renaming a
// new link over the old one.
void replace_symlink(const std::string& directory, const std::string& name,
                     const std::string& target);
// Renames a step folder to a temporary name, then deletes it: a half-deleted folder is
// never mistaken for a checkpoint.
void remove_step_folder(const std::string& directory, const std::string& path);

}  // namespace sonata::checkpoint_files
