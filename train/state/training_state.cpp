#include "train/state/training_state.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/nn/state_dict.h"
#include "engine/random.h"
#include "train/state/resume_changes.h"

namespace sonata {
namespace {

constexpr const char* kScalerPrefix = "scaler.";

}  // namespace

TrainingState capture_training_state(const TrainerOptions& options, Task& task,
                                     const Optimizer& optimizer, const LossScaler& scaler,
                                     const TrainPosition& position) {
  TrainingState state;
  state.model = task.model().state_dict();
  state.optimizer = optimizer.state_dict();
  state.scalars["step"] = double(position.step);
  state.scalars["epoch"] = double(position.epoch);
  state.scalars["batch"] = double(position.batch);
  for (const auto& [key, value] : scaler.state_dict()) state.scalars[kScalerPrefix + key] = value;
  state.texts = task.checkpoint_texts();
  state.texts.merge(task.checkpoint_notes());
  state.texts["model"] = options.model;
  state.texts["config"] = options.to_json();
  state.texts["generator.seed"] = std::to_string(default_generator().seed());
  state.texts["generator.offset"] = std::to_string(default_generator().offset());
  return state;
}

TrainPosition restore_training_state(const PartialTrainingState& loaded,
                                     const TrainerOptions& options, Task& task,
                                     Optimizer& optimizer, LossScaler& scaler,
                                     std::vector<std::string>* notes) {
  const TrainingState& state = loaded.state;
  std::map<std::string, std::string> expected = task.checkpoint_texts();
  expected["model"] = options.model;
  check_compatible(loaded.model_in_file, state.texts, task.model().state_dict(), expected);

  auto scalar = [&](const char* key) {
    const auto found = state.scalars.find(key);
    SONATA_CHECK(found != state.scalars.end(), "the checkpoint has no '", key,
                 "' (it was not written by the trainer)");
    return int64_t(found->second);
  };
  auto text = [&](const char* key) -> const std::string& {
    const auto found = state.texts.find(key);
    SONATA_CHECK(found != state.texts.end(), "the checkpoint has no '", key,
                 "' (it was not written by the trainer)");
    return found->second;
  };
  const TrainPosition position{scalar("step"), scalar("epoch"), scalar("batch")};
  // Before anything is loaded: a change this resume cannot honour is refused.
  *notes = resume_changes(nlohmann::json::parse(text("config")),
                          nlohmann::json::parse(options.to_json()), position.step, position.epoch,
                          position.batch);

  // The fit judged whole above: what this rank holds of it is loaded.
  LoadStateOptions load_options;
  load_options.only_given = true;
  load_state_dict(task.model(), state.model, load_options);
  // The hyper-parameters are this command line's (as the notes say), the state the
  // checkpoint's: torch's load_state_dict would bring back the old lr, betas and decay.
  std::vector<HyperParameters> given;
  for (const ParamGroup& group : optimizer.param_groups()) given.push_back(group.options);
  optimizer.load_state_dict(state.optimizer);
  for (size_t g = 0; g < given.size(); ++g)
    for (const auto& [name, value] : given[g]) optimizer.set_option(g, name, value);
  std::map<std::string, double> scaler_state;
  for (const auto& [key, value] : state.scalars)
    if (key.rfind(kScalerPrefix, 0) == 0) scaler_state[key.substr(7)] = value;
  scaler.load_state_dict(scaler_state);

  default_generator() = Generator(std::stoull(text("generator.seed")));
  default_generator().set_offset(std::stoull(text("generator.offset")));
  return position;
}

std::string resume_path(const TrainerOptions& options) {
  if (!options.resumes_newest()) return options.resume;
  return has_step_folders(options.checkpoint_dir) ? options.checkpoint_dir : "";
}

namespace {

// `load` of `path`, its errors named by --resume; under --resume auto a folder none of whose
// checkpoints loads is refused with what to do about it.
template <typename Load>
auto resume_or_refuse(const TrainerOptions& options, Load load) {
  try {
    return load();
  } catch (const Error& e) {
    // Named by the flag the path came from, as the user wrote it.
    if (!options.resumes_newest()) throw Error(str("--resume: ", e.what()));
    throw Error(str("--resume auto: ", e.what(),
                    "\nNot starting a fresh run over them: move them out of '",
                    options.checkpoint_dir, "' to start anew, or name one with --resume."));
  }
}

}  // namespace

TrainingState load_resume_checkpoint(const std::string& path, const TrainerOptions& options,
                                     CheckpointSource* source) {
  return resume_or_refuse(options, [&] { return load_checkpoint(path, source); });
}

PartialTrainingState load_resume_checkpoint(const std::string& path, const TrainerOptions& options,
                                            const StateOwnership& ownership,
                                            CheckpointSource* source) {
  return resume_or_refuse(options, [&] { return ownership.read_checkpoint(path, source); });
}

}  // namespace sonata
