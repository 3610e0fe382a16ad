#include "train/state/resume_changes.h"

#include "base/error.h"
#include "train/option_table.h"

namespace sonata {
namespace {

// What a resume may do with `key` (train/option_table.cpp). Keys outside the table (the
// model's own options, the feature description) change from the resumed step on.
// Options fixed by the checkpoint: its optimizer state's kind and parameter groups, its
// weights' dtypes, and its step count, which counts batches of its size; changing one would
// silently train something else, and a new run from the weights (--init-from) is the way.
// Options that decide the order of an epoch's batches change at an epoch's start, since the
// rest of a started epoch was drawn in the old order. (Not --train: a manifest at another
// path may hold the same data, as each rank's copy does; a training set of another size is
// refused by the trainer's epoch length check.)
OnResume on_resume(const std::string& key) {
  const OptionRow* row = option_of_checkpoint_key(key);
  return row ? row->on_resume : OnResume::change;
}

}  // namespace

std::vector<std::string> resume_changes(const nlohmann::json& before, const nlohmann::json& now,
                                        int64_t step, int64_t epoch, int64_t batch) {
  std::vector<std::string> notes;
  for (const auto& [key, value] : now.items()) {
    const OnResume rule = on_resume(key);
    if (rule == OnResume::run_only) continue;
    const auto old = before.find(key);
    if (old == before.end()) {
      notes.push_back(str("resumed run sets --", key, " ", value.dump(),
                          " (not in the checkpoint), in effect from step ", step, " on"));
      continue;
    }
    if (*old == value) continue;
    if (rule == OnResume::fixed)
      throw Error(str("--", key, " cannot change on resume (", old->dump(), " in the checkpoint, ",
                      value.dump(), " here): ", option_of_checkpoint_key(key)->fixed_because,
                      "; resume with --", key, " ", old->dump(),
                      ", or start a new run from its weights with --init-from ",
                      "<checkpoint folder>/model.safetensors"));
    if (rule == OnResume::epoch_start && batch > 0)
      throw Error(str("--", key, " cannot change in the middle of an epoch (", old->dump(),
                      " in the checkpoint, ", value.dump(), " here): the checkpoint is at batch ",
                      batch, " of epoch ", epoch + 1, ", drawn in the old order; resume with --",
                      key, " ", old->dump(), " and change it from a checkpoint at an epoch's end"));
    std::string note = str("resumed run changes --", key, " from ", old->dump(), " to ",
                           value.dump(), ", in effect from step ", step, " on");
    const Choice<OptimizerKind> optimizer(now.value("optimizer", ""));
    const bool sgd = optimizer == OptimizerKind::sgd;
    const bool sgd_only = key == "momentum" || key == "nesterov";
    const bool adam_only = key == "beta1" || key == "beta2" || key == "eps";
    if ((sgd_only && !sgd) || (adam_only && sgd))
      note = str("resumed run changes --", key, " from ", old->dump(), " to ", value.dump(),
                 ", which --optimizer ", optimizer, " does not use");
    if (key == "seed")
      note += str(" (the data order and augmentations from epoch ", epoch + 1,
                  "; dropout continues the checkpoint's random stream)");
    notes.push_back(note);
  }
  return notes;
}

}  // namespace sonata
