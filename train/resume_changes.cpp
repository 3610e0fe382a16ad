#include "train/resume_changes.h"

#include <set>

#include "base/error.h"

namespace sonata {
namespace {

// Options that may change between a run and its resume without changing what is trained.
bool is_run_only_option(const std::string& key) {
  return key == "device" || key == "progress" || key == "metrics" || key == "log-every";
}

// What the checkpoint itself fixes: its optimizer state's kind and parameter groups, its
// weights' dtypes, and its step count, which counts batches of its size. Changing one would
// silently train something else; a new run from the weights (--init-from) is the way.
const std::set<std::string>& fixed_by_checkpoint() {
  static const std::set<std::string> keys{"optimizer", "decay-norm-and-bias", "precision",
                                          "batch-size", "accum-steps"};
  return keys;
}

std::string why_fixed(const std::string& key) {
  if (key == "optimizer") return "the checkpoint holds that optimizer's state";
  if (key == "decay-norm-and-bias") return "the checkpoint's optimizer state has its groups";
  if (key == "precision") return "the checkpoint's weights are stored in that precision";
  // batch-size, accum-steps: the step count, epoch length and schedule are in its batches.
  return "the checkpoint's step count, epoch length and schedule position count batches of "
         "that size";
}

// Options that decide the order of an epoch's batches: a change applies at an epoch's start,
// since the rest of a started epoch was drawn in the old order. (Not --train: a manifest at
// another path may hold the same data, as each rank's copy does; a training set of another
// size is refused by the trainer's epoch length check.)
const std::set<std::string>& epoch_order_options() {
  static const std::set<std::string> keys{"seed", "sortagrad", "class-balanced"};
  return keys;
}

}  // namespace

std::vector<std::string> resume_changes(const nlohmann::json& before, const nlohmann::json& now,
                                        int64_t step, int64_t epoch, int64_t batch) {
  std::vector<std::string> notes;
  for (const auto& [key, value] : now.items()) {
    if (is_run_only_option(key)) continue;
    const auto old = before.find(key);
    if (old == before.end()) {
      notes.push_back(str("resumed run sets --", key, " ", value.dump(),
                          " (not in the checkpoint), in effect from step ", step, " on"));
      continue;
    }
    if (*old == value) continue;
    if (fixed_by_checkpoint().count(key))
      throw Error(str("--", key, " cannot change on resume (", old->dump(), " in the checkpoint, ",
                      value.dump(), " here): ", why_fixed(key), "; resume with --", key, " ",
                      old->dump(), ", or start a new run from its weights with --init-from ",
                      "<checkpoint folder>/model.safetensors"));
    if (epoch_order_options().count(key) && batch > 0)
      throw Error(str("--", key, " cannot change in the middle of an epoch (", old->dump(),
                      " in the checkpoint, ", value.dump(), " here): the checkpoint is at batch ",
                      batch, " of epoch ", epoch + 1, ", drawn in the old order; resume with --",
                      key, " ", old->dump(), " and change it from a checkpoint at an epoch's end"));
    std::string note = str("resumed run changes --", key, " from ", old->dump(), " to ",
                           value.dump(), ", in effect from step ", step, " on");
    const std::string optimizer = now.value("optimizer", "");
    const bool sgd_only = key == "momentum" || key == "nesterov";
    const bool adam_only = key == "beta1" || key == "beta2" || key == "eps";
    if ((sgd_only && optimizer != "sgd") || (adam_only && optimizer == "sgd"))
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
