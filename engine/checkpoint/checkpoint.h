#pragma once
// Training checkpoints: one directory per save, `<directory>/step-<12-digit step>/`, holding
//   model.safetensors  the model's state_dict and nothing else (PyTorch names), so that
//                      torch's module.load_state_dict(safetensors.torch.load_file(...)) works;
//   state.safetensors  the optimizer's state tensors under their own names, and in the
//                      string metadata everything else: "format", "step", "metric" (when
//                      given), "scalar.<name>" and "optimizer.<name>" (doubles as "%.17g",
//                      which read back to the same bits) and "text.<name>".
// A save is written into a temporary sibling folder and renamed into place, each file and
// folder fsync'd, so a crash leaves either the whole step folder or none; `latest` and `best`
// are symlinks to step folders, replaced atomically. Both files carry the CRC-32C of their
// bytes in their metadata (engine/io/safetensors_checksum.h; torch ignores it), so a file
// damaged after it was written is refused on load like a truncated one, never loaded.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/io/safetensors.h"
#include "engine/nn/module.h"
#include "engine/optim/optimizer.h"
#include "engine/tensor_spec.h"

namespace sonata {

struct TrainingState {
  NamedTensors model;                        // the model's state_dict
  OptimizerState optimizer;                  // engine/optim/optimizer.h
  std::map<std::string, double> scalars;     // step, epoch, scaler.*, sampler position, ...
  std::map<std::string, std::string> texts;  // "model", "config", "vocabulary", RNG states,
                                             // 64-bit counters (as decimal text), ...
};

// A TrainingState whose tensors are fetched as they are written (TensorSource,
// engine/io/safetensors.h): a writer that receives them from the processes holding them
// holds one at a time. The files are those of the same TrainingState, byte for byte.
struct TrainingStateSource {
  TensorSource model;
  TensorSource optimizer_tensors;
  std::map<std::string, double> optimizer_scalars;
  std::map<std::string, double> scalars;
  std::map<std::string, std::string> texts;
};
// `state` as a source, fetching from it (which must outlive the source).
TrainingStateSource training_state_source(const TrainingState& state);

class CheckpointManager {
 public:
  // `metric_mode`: "min" (CER, loss) or "max" (accuracy) decides which metric is best.
  // `keep_last`: how many step folders to keep (0 keeps all); the best is kept besides.
  // A step folder that does not verify (engine/checkpoint/checkpoint_format.h: a truncated
  // file, a checksum that does not match) is never deleted nor overwritten, and does not
  // count among the last kept: it is left for whoever wants to look at it, and said on
  // stderr. Opening a folder that holds checkpoints picks up their best metric, and removes
  // temporary folders that other (dead) processes left behind.
  CheckpointManager(std::string directory, int64_t keep_last, std::string metric_mode);

  // Writes step-<step>/ (replacing one of the same step; one that does not verify is moved
  // aside to step-<step>.damaged[-N] instead), points `latest` at it and, when `metric`
  // beats the best so far, `best`; then prunes old step folders. Returns the step folder's
  // path.
  std::string save(const TrainingState& state, int64_t step,
                   std::optional<double> metric = std::nullopt);
  // The same, its tensors fetched one at a time as each file is written.
  std::string save(const TrainingStateSource& state, int64_t step,
                   std::optional<double> metric = std::nullopt);

  std::optional<double> best_metric() const { return best_metric_; }
  // The best step folder's path, "" when no save had a metric.
  std::string best_checkpoint() const;
  const std::string& directory() const { return directory_; }

 private:
  bool better(double metric) const;
  // The best metric among the step folders present, and `best` pointed at its folder.
  void rescan_best();
  // Removes the step folders older than the newest keep_last that verify, sparing the best,
  // the one just saved and every one that does not verify.
  void prune(int64_t saved_step);
  // Whether the step folder verifies; checked once per folder (this process's own saves
  // are known good), a failure said on stderr.
  bool verifies(int64_t step, const std::string& path);

  std::map<int64_t, bool> verified_;  // step -> whether its folder verifies
  std::string directory_;
  int64_t keep_last_;
  bool maximize_;
  std::optional<double> best_metric_;
  int64_t best_step_ = -1;
};

// Where load_checkpoint found the state: the step folder, and the newer ones it skipped,
// each as the error saying why.
struct CheckpointSource {
  std::string folder;
  std::vector<std::string> skipped;
};

// `path` is a step folder, or a checkpoint directory: then its newest step folder that
// loads; a newer one that does not is reported on stderr with the reason, and skipped. A
// step folder that is unreadable (missing, truncated or corrupt file, bytes that do not
// match the file's checksum) is one error naming the file and what is wrong; a directory
// none of whose step folders loads is one error naming each and why. Tensors come back on
// the CPU. `source`, when given, receives where the state came from.
TrainingState load_checkpoint(const std::string& path, CheckpointSource* source = nullptr);

// Which tensors a process reads of a checkpoint (a pipeline stage: its own), by name.
struct CheckpointSelection {
  std::function<bool(const std::string&)> model;      // of model.safetensors
  std::function<bool(const std::string&)> optimizer;  // of state.safetensors
  // Of a selected tensor, only rows [first, second) along dim 0 (a pipeline stage's piece of
  // a layer cut by rows); nullopt, or no function, reads it whole.
  using RowsOf = std::function<std::optional<std::pair<int64_t, int64_t>>(const std::string&)>;
  RowsOf model_rows, optimizer_rows;
};
// A checkpoint read in part: what every model tensor is, from the header, besides the
// selected tensors, so that check_compatible can judge the whole checkpoint.
struct PartialTrainingState {
  TrainingState state;                    // the selected tensors, every scalar and text
  std::vector<TensorSpec> model_in_file;  // every tensor of model.safetensors, in its order
};
// load_checkpoint keeping only the selected tensors: the step folder is chosen, and a
// damaged one refused or skipped, as load_checkpoint does (every byte of both files still
// passes through their checksums, streamed), but the tensors not selected are never held.
PartialTrainingState load_checkpoint_part(const std::string& path,
                                          const CheckpointSelection& selection,
                                          CheckpointSource* source = nullptr);

// Whether `directory` holds any step folder, whether it loads or not.
bool has_step_folders(const std::string& directory);

// The newest step folder of `directory` whose two files are whole (their headers parse and
// their sizes match; the checksums are not read), "" when there is none.
std::string latest_checkpoint(const std::string& directory);

// Refuses, in one error listing every difference, a checkpoint whose model tensors differ
// from `expected_model` (missing, unexpected, other shape or dtype: the first ten, then how
// many more) or whose texts differ from `expected_texts` on any of its keys (both values
// shown, shortened around the first difference).
void check_compatible(const TrainingState& checkpoint, const NamedTensors& expected_model,
                      const std::map<std::string, std::string>& expected_texts);
// The same from what the checkpoint's tensors are (a header: PartialTrainingState) and its
// texts, with the same error.
void check_compatible(const std::vector<TensorSpec>& checkpoint_model,
                      const std::map<std::string, std::string>& checkpoint_texts,
                      const NamedTensors& expected_model,
                      const std::map<std::string, std::string>& expected_texts);

}  // namespace sonata
