#pragma once
// Every plain trainer option, declared once: its name (the flag without "--", and the key in a
// config file), the TrainerOptions field it sets, its --help group and text, whether --help
// shows its default, its key in the checkpoint's JSON (or none: not kept), and what a resume
// may do with it. add_trainer_options registers the command line from this table (and CLI11
// reads config files through the same options), TrainerOptions::to_json writes the
// checkpoint's JSON from it, and resume_changes asks it what may change. The model's own
// options (models/registry.h), the feature flags (feature_flags.h), --config, and the refusal
// of --micro-batches (--accum-steps' old second name) are registered beside it. A mode's row
// reads its words into an enum (option_modes.h).
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "models/model_family.h"
#include "train/option_modes.h"
#include "train/trainer_options.h"

namespace sonata {

// What a resume may do with an option whose value differs from the checkpoint's run.
enum class OnResume {
  change,       // in effect from the resumed step on, and said so
  run_only,     // how this process runs (device, output), not what it trains: not compared
  fixed,        // the checkpoint's state depends on it: refused
  epoch_start,  // it orders an epoch's batches: refused in the middle of an epoch
};

// A mode (Choice<...>) reads its words into its enum (option_modes.h).
using OptionField =
    std::variant<std::string TrainerOptions::*, int64_t TrainerOptions::*,
                 uint64_t TrainerOptions::*, double TrainerOptions::*, bool TrainerOptions::*,
                 std::vector<double> TrainerOptions::*, Choice<Precision> TrainerOptions::*,
                 Choice<FeaturesOn> TrainerOptions::*, Choice<OptimizerKind> TrainerOptions::*,
                 Choice<ScheduleShape> TrainerOptions::*, Choice<ScheduleUnit> TrainerOptions::*,
                 Choice<BadInput> TrainerOptions::*, Choice<CommDtype> TrainerOptions::*,
                 Choice<PipelineBalance> TrainerOptions::*, Choice<ImageFeatures> TrainerOptions::*,
                 Choice<ProgressMode> TrainerOptions::*, Choice<Tf32Mode> TrainerOptions::*,
                 Choice<LrScalingRule> TrainerOptions::*,
                 Choice<PipelineSchedule> TrainerOptions::*>;

struct OptionRow {
  std::string name;   // "lr": --lr on the command line, lr: in a config file
  OptionField field;  // a bool field is a flag (--sortagrad); a list reads "0.1,0.2"
  const char* group;  // --help's heading
  std::string help;
  bool show_default = true;         // --help shows the field's default
  const char* checkpoint_key = "";  // its key in the checkpoint's JSON; "": not kept
  OnResume on_resume = OnResume::change;
  const char* fixed_because = "";  // OnResume::fixed: why, in the refusal
  // Set: the option is for that family's models only; check() refuses it set (off its
  // default) with another model, naming the models it is for.
  std::optional<ModelFamily> family = std::nullopt;
  const char* refused_as = "";  // that refusal's subject when not the flag ("--a and --b")
};

// In --help's order.
const std::vector<OptionRow>& option_table();

// The row whose checkpoint_key is `key`; null for the keys outside the table (the model, its
// own options, the feature description).
const OptionRow* option_of_checkpoint_key(const std::string& key);

}  // namespace sonata
