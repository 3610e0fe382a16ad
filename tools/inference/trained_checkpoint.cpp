#include "tools/inference/trained_checkpoint.h"

#include "base/error.h"
#include "engine/nn/state_dict.h"
#include "tools/inference/feature_description.h"

namespace sonata {

namespace {

// What a family's checkpoints are, for the sentence that refuses the other.
const char* kind_of(ModelFamily family) {
  return family == ModelFamily::speech ? "speech-recognition" : "classification";
}

const char* command_of(ModelFamily family) {
  return family == ModelFamily::speech ? "transcribe" : "classify";
}

std::string checkpoint_kind(const std::string& model) {
  const ModelEntry* entry = find_model(model);
  if (!entry) return str("a checkpoint of model '", model, "'");
  return str("a ", model, " ", kind_of(entry->family), " checkpoint (use ",
             command_of(entry->family), ")");
}

}  // namespace

TrainedCheckpoint read_trained_checkpoint(const std::string& path) {
  TrainedCheckpoint checkpoint;
  checkpoint.path = path;
  try {
    checkpoint.state = load_checkpoint(path);
  } catch (const Error& error) {
    throw Error(str("--checkpoint: ", error.what()));  // the flag the path came from
  }
  const auto model = checkpoint.state.texts.find("model");
  const auto config = checkpoint.state.texts.find("config");
  SONATA_CHECK(model != checkpoint.state.texts.end() && config != checkpoint.state.texts.end(),
               "checkpoint '", path,
               "' has no saved model and options: it was not written by the "
               "trainer");
  checkpoint.model = model->second;
  try {
    checkpoint.config = nlohmann::json::parse(config->second);
  } catch (const nlohmann::json::parse_error&) {
    throw Error(str("checkpoint '", path, "' has damaged saved options (not valid JSON)"));
  }
  SONATA_CHECK(checkpoint.config.is_object(), "checkpoint '", path,
               "' has damaged saved options (not a JSON object)");
  return checkpoint;
}

ModelConfig TrainedCheckpoint::model_config() const {
  // The trainer writes the model's options beside its own (TrainerOptions::to_json): the
  // model's are the keys its registry entry takes.
  ModelConfig model_options;
  const ModelEntry* entry = find_model(model);
  if (!entry) return model_options;
  for (const ModelOption& taken : entry->options) {
    const auto value = config.find(taken.key);
    if (value != config.end())
      model_options.set(taken.key, value->is_string() ? value->get<std::string>() : value->dump());
  }
  return model_options;
}

FeatureConfig TrainedCheckpoint::features() const {
  const nlohmann::json& description = option("features");
  SONATA_CHECK(description.is_string(), "checkpoint '", path, "' saved its features as a ",
               description.type_name(), ", not a description");
  return parse_feature_description(description.get<std::string>());
}

const std::string& TrainedCheckpoint::text(const std::string& key) const {
  const auto found = state.texts.find(key);
  SONATA_CHECK(found != state.texts.end(), "checkpoint '", path, "' has no saved ", key);
  return found->second;
}

const nlohmann::json& TrainedCheckpoint::option(const std::string& key) const {
  const auto found = config.find(key);
  SONATA_CHECK(found != config.end(), "checkpoint '", path, "' has no saved option '", key, "'");
  return *found;
}

void require_family(const TrainedCheckpoint& checkpoint, ModelFamily family,
                    const std::string& command) {
  const ModelEntry* entry = find_model(checkpoint.model);
  SONATA_CHECK(entry && entry->family == family, "'", checkpoint.path, "' is ",
               checkpoint_kind(checkpoint.model), ", and ", command, " needs a ",
               name_list(model_names(family)), " ", kind_of(family), " checkpoint");
}

void load_weights(Module& model, const TrainedCheckpoint& checkpoint, Device device) {
  try {
    load_state_dict(model, checkpoint.state.model);
  } catch (const Error& error) {
    throw Error(str("the weights of '", checkpoint.path,
                    "' do not fit the model its options "
                    "describe: ",
                    error.what()));
  }
  model.to(device);
  model.eval();
}

Device inference_device(const std::string& name) {
  if (name == "auto") return cuda_device_count() > 0 ? Device::cuda(0) : Device::cpu();
  const Device device = Device::parse(name);
  SONATA_CHECK(!device.is_cuda() || device.index < cuda_device_count(), "--device ", name,
               ": this machine has ", cuda_device_count(), " CUDA devices (",
               cuda_available() ? "fewer than asked" : cuda_unavailable_reason(), ")");
  return device;
}

}  // namespace sonata
