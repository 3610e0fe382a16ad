#pragma once
// Which run a checkpoint directory holds: `<directory>/run.json`, {"run": "<16 hex digits>"},
// written by the trainer when a run starts there. Every step folder saved in a directory with
// the file records its id (state.safetensors' "run" metadata), so that a step folder of
// another run copied in is refused on load; and a directory with the file holds no checkpoint
// that loads without its checksums (engine/checkpoint/checkpoint_format.cpp's binding check).
#include <string>

namespace sonata {

inline constexpr char kRunFile[] = "run.json";

// The id recorded in `directory`, "" when it has none (a run of older sonata, or a folder
// that is no run's). A file that is not one sonata wrote is an error naming it.
std::string read_run_id(const std::string& directory);
// A fresh id: 16 hex digits from /dev/urandom.
std::string new_run_id();
// Writes `id` into `directory`/run.json durably (a temporary file, fsync, rename).
void write_run_id(const std::string& directory, const std::string& id);

}  // namespace sonata
