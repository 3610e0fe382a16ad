// A run's checkpoints: --resume (the state loaded, the position to continue from), the
// weights --eval-only evaluates, and saving at epoch ends, --checkpoint-every and
// --stop-after.
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/nvtx.h"
#include "engine/nn/state_dict.h"
#include "train/loop/train_loop_run.h"
#include "train/state/manifest_fingerprint.h"

namespace sonata {

TrainPosition TrainingRun::resume() {
  TrainPosition start;
  if (o_.resume.empty()) return start;
  const std::string path = resume_path(o_);
  CheckpointSource source;
  // What the resume changes (resume_changes.h): said whatever --progress, and logged.
  std::vector<std::string> notes;
  if (path.empty()) {
    progress_.print(str("--resume auto: no checkpoint in ", o_.checkpoint_dir, " yet; starting"));
  } else {
    // What this rank holds of it, as it holds it (a pipeline stage: its own tensors alone).
    const PartialTrainingState loaded =
        load_resume_checkpoint(path, o_, strategy_->ownership(), &source);
    const auto batch = loaded.state.scalars.find("batch");
    const std::string manifest_note =
        manifest_change(loaded.state.texts, o_.train_manifest, train_manifest_fingerprint_,
                        source.folder, batch != loaded.state.scalars.end() && batch->second != 0);
    start = restore_training_state(loaded, o_, task_, *optimizer_, *scaler_, &notes);
    if (!manifest_note.empty()) notes.push_back(manifest_note);
    check_epoch_length(loaded.state, start.step);
    restore_log_sums(loaded.state);
    progress_.print(str("resumed from ", source.folder, " at step ", start.step, " (epoch ",
                        start.epoch + 1, ", batch ", start.batch, ")"));
    for (const std::string& skipped : source.skipped)
      progress_.notice(str("  skipped a newer checkpoint, kept as it is: ", skipped));
    for (const std::string& note : notes) progress_.notice(note);
    last_saved_step_ = start.step;
  }
  // What the interrupted run logged past this step is done again: dropped, so that the
  // log reads as one run.
  metrics_.drop_after_step(start.step);
  if (!path.empty())
    metrics_.write({{"event", "resume"},
                    {"step", start.step},
                    {"checkpoint", source.folder},
                    {"skipped", source.skipped},
                    {"changes", notes}});
  return start;
}

void TrainingRun::check_epoch_length(const TrainingState& checkpoint, int64_t step) const {
  const auto saved = checkpoint.scalars.find(kStepsPerEpoch);
  if (saved == checkpoint.scalars.end()) return;  // written before the count was kept
  const int64_t theirs = int64_t(saved->second);
  if (theirs == steps_per_epoch_) return;
  throw Error(str("this run's epochs have ", steps_per_epoch_,
                  " steps, the checkpoint's run's had ", theirs,
                  " (its training items, --batch-size, --accum-steps or number of ",
                  "processes differ): its step ", step,
                  " would fall elsewhere in an epoch and in the schedule; resume with the same "
                  "data and batch layout, or start a new run from its weights with --init-from "
                  "<checkpoint folder>/model.safetensors"));
}

void TrainingRun::load_weights_to_evaluate() {
  const std::string path = resume_path(o_);
  SONATA_CHECK(!path.empty(), "--eval-only --resume auto: no checkpoint in ", o_.checkpoint_dir);
  CheckpointSource source;
  const TrainingState state = load_resume_checkpoint(path, o_, &source);
  std::map<std::string, std::string> expected = task_.checkpoint_texts();
  expected["model"] = o_.model;
  check_compatible(state, model_.state_dict(), expected);
  load_state_dict(model_, state.model);
  progress_.print(str("weights of ", source.folder));
}

void TrainingRun::save_checkpoint(const TrainPosition& position, std::optional<double> metric) {
  if (o_.checkpoint_dir.empty() || last_saved_step_ == position.step) return;
  SONATA_NVTX_RANGE("sonata::checkpoint");
  // Only good checkpoints: none while the loss is non-finite (the weights are then those of
  // the last good step anyway, and resuming into the NaN run would help no one). Where
  // several ranks hold parts of the checkpoint, they decide alike.
  const StateOwnership& ownership = strategy_->ownership();
  const bool bad_here = bad_streak_.defined() && bad_streak_.item() > 0;
  if (ownership.on_any_holder(bad_here)) return;
  last_saved_step_ = position.step;
  const std::map<std::string, double> log_sums = log_sums_over_ranks();
  const auto capture = [&] {
    TrainingState state = capture_training_state(o_, task_, *optimizer_, *scaler_, position);
    state.scalars[kStepsPerEpoch] = double(steps_per_epoch_);
    state.scalars.insert(log_sums.begin(), log_sums.end());
    if (!train_manifest_fingerprint_.empty()) {
      state.texts[kTrainManifestKey] = train_manifest_fingerprint_;
      state.texts[kTrainManifestPathKey] = o_.train_manifest;
    }
    return state;
  };
  // In one process's format, whoever holds its parts; written by the writer (checkpoints_).
  const std::string path =
      ownership.write_checkpoint(checkpoints_.get(), capture, position.step, metric);
  if (!checkpoints_) return;
  result_.last_checkpoint = path;
  metrics_.write(
      {{"event", "checkpoint"}, {"step", position.step}, {"path", result_.last_checkpoint}});
}

}  // namespace sonata
