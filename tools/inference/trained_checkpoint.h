#pragma once
// A checkpoint the trainer wrote, read for inference (transcribe, classify): the weights, the
// options the run was trained with (the model's size, the features, the slice and image
// settings) and its vocabulary or label map, all from the checkpoint itself, so that a model
// is used as it was trained whatever flags a later command is given.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "data/features/feature_config.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/device.h"
#include "engine/nn/module.h"
#include "models/registry.h"

namespace sonata {

struct TrainedCheckpoint {
  std::string path;       // as given: a checkpoint directory (its newest step) or a step folder
  std::string model;      // a registry name (models/registry.cpp): "ds2", "vgg19_bn", ...
  nlohmann::json config;  // the trainer's options, as TrainerOptions::to_json wrote them
  TrainingState state;

  // The model's own options (conv-channels, hidden, width, in-channels, ...): the saved
  // options that a default TrainerOptions does not have.
  ModelConfig model_config() const;
  // The features the run computed, from the saved "features" description.
  FeatureConfig features() const;
  // A saved text ("vocabulary", "label_map"); throws naming the checkpoint when absent.
  const std::string& text(const std::string& key) const;
  // A saved option; throws naming the checkpoint when absent.
  const nlohmann::json& option(const std::string& key) const;
};

// Reads `path` (load_checkpoint) and its saved options. Throws one sentence naming the path
// when it is not a checkpoint the trainer wrote.
TrainedCheckpoint read_trained_checkpoint(const std::string& path);

// Refuses a checkpoint of a model of another family (or of no registered model), in one
// sentence naming what it holds and which command uses it: `command` ("transcribe") needs a
// model of `family` (speech).
void require_family(const TrainedCheckpoint& checkpoint, ModelFamily family,
                    const std::string& command);

// `model`'s weights loaded from the checkpoint (any saved floating dtype, converted), moved
// to `device`, in eval mode. A tensor missing or of another shape throws naming it.
void load_weights(Module& model, const TrainedCheckpoint& checkpoint, Device device);

// --device: auto (the first GPU if there is one, else the CPU), cpu, cuda, cuda:N; a GPU the
// machine lacks throws saying so.
Device inference_device(const std::string& name);

}  // namespace sonata
