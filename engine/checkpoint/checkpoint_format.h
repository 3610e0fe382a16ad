#pragma once
// What a step folder holds (engine/checkpoint/checkpoint.h): writing a TrainingState into
// one, reading it back, and checking that its files are whole without reading their data.
// Internal to engine/checkpoint/.
#include <cstdint>
#include <optional>
#include <string>

#include "engine/checkpoint/checkpoint.h"
#include "engine/io/safetensors.h"

namespace sonata::checkpoint_format {

inline constexpr char kModelFile[] = "model.safetensors";
inline constexpr char kStateFile[] = "state.safetensors";
// The "format" metadata value; a reader refuses any other.
inline constexpr char kFormat[] = "sonata-checkpoint-1";
// state.safetensors' metadata binding a step folder's files: model.safetensors' checksum
// digits, and the run id of the folder it was saved in (run_identity.h) when it has one.
inline constexpr char kModelChecksumKey[] = "model.crc32c";
inline constexpr char kRunKey[] = "run";

// Writes model.safetensors and state.safetensors into the existing folder `folder`, each
// fsync'd (the folder itself is the caller's to fsync), each tensor fetched as it is due.
void write_step_folder(const std::string& folder, const TrainingStateSource& state, int64_t step,
                       std::optional<double> metric);
// Reads a step folder; an error names the folder, the file and what is wrong.
TrainingState read_step_folder(const std::string& folder);
// The same, keeping only the selected tensors (every byte still checked against the files'
// checksums, streamed).
PartialTrainingState read_step_folder_part(const std::string& folder,
                                           const CheckpointSelection& selection);

// Both files of a step folder whole (their headers alone: sizes, not the checksums), their
// format ours; throws naming the file otherwise.
void check_step_folder_whole(const std::string& folder);
// Both files of a step folder whole and their bytes those that were written (checksums,
// streamed without loading the tensors), their format ours; the error names the folder.
void verify_step_folder(const std::string& folder);
// The "metric" a step folder was saved with, nullopt when none (or when it is not whole).
std::optional<double> saved_metric(const std::string& folder);

// "%.17g": the double that reads back to the same bits.
std::string format_double(double value);

}  // namespace sonata::checkpoint_format
