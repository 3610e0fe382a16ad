#include "train/strategy/state_ownership.h"

namespace sonata {

PartialTrainingState IdentityOwnership::read_checkpoint(const std::string& path,
                                                        CheckpointSource* source) const {
  PartialTrainingState loaded{load_checkpoint(path, source), {}};
  for (const auto& [name, tensor] : loaded.state.model)
    loaded.model_in_file.push_back({name, tensor.dtype(), tensor.shape()});
  return loaded;
}

std::string IdentityOwnership::write_checkpoint(CheckpointManager* writer,
                                                const std::function<TrainingState()>& capture,
                                                int64_t step, std::optional<double> metric) const {
  return writer ? writer->save(capture(), step, metric) : "";
}

}  // namespace sonata
