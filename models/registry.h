#pragma once
// Models by name ("ds2", "vgg19_bn", ...), built from string options as the trainer and
// the probe take them on their command lines. Each row of the registry (models/registry.cpp)
// gives a model's name, family, options and help, and its factory: the trainer offers
// --model and the models' option flags from it and picks the task by the family, so adding
// a model of an existing family touches models/ and its tests only (docs/adding-a-model.md).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/nn/module.h"
#include "models/model_family.h"

namespace sonata {

class ModelConfig {
 public:
  ModelConfig() = default;
  explicit ModelConfig(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  bool has(const std::string& key) const { return values_.count(key) > 0; }
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_double(const std::string& key, double fallback) const;
  // One of `choices` (the fallback when the key is absent); anything else is refused.
  std::string get_choice(const std::string& key, const std::string& fallback,
                         const std::vector<std::string>& choices) const;
  // Refuses keys outside `known`, naming them and the accepted ones.
  void check_keys(const std::string& model, const std::vector<std::string>& known) const;

 private:
  std::map<std::string, std::string> values_;
};

// An option a user sets on the model (the trainer's flag --<key>); the keys its family's task
// sets (model_family.h) are not listed.
struct ModelOption {
  std::string key;   // "hidden"
  std::string help;  // its choices and default, taken from the model's options struct
};

struct ModelEntry {
  std::string name;  // "vgg19_bn": --model's value, saved in checkpoints
  ModelFamily family;
  std::string header;  // "models/vgg.h": where the model and its options are described
  std::string help;    // one line for --help
  std::vector<ModelOption> options;
  std::function<std::shared_ptr<Module>(const ModelConfig&)> factory;
};

// Every registered model, in --help's order.
const std::vector<ModelEntry>& model_registry();
// The row named `name`; null when there is none.
const ModelEntry* find_model(const std::string& name);
// The row named `name`; throws naming the known models when there is none.
const ModelEntry& model_entry(const std::string& name);

std::shared_ptr<Module> make_model(const std::string& name, const ModelConfig& config = {});
// A model of the speech family; throws naming the model when `name` is of another family.
std::shared_ptr<SpeechModel> make_speech_model(const std::string& name, const ModelConfig& config);
// A model of the image-classifier family; throws likewise.
std::shared_ptr<ImageClassifier> make_image_classifier(const std::string& name,
                                                       const ModelConfig& config);

std::vector<std::string> model_names();
// The names of `family`'s models, in the registry's order.
std::vector<std::string> model_names(ModelFamily family);
// "a, b or c": names for a message.
std::string name_list(const std::vector<std::string>& names, const char* last = " or ");

}  // namespace sonata
