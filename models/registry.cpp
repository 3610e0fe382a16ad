#include "models/registry.h"

#include <charconv>

#include "base/error.h"
#include "models/ds2.h"
#include "models/vgg.h"

namespace sonata {
namespace {

// One explicit table: static self-registration would be dropped by the linker from a
// static library. --help lists the models in this order.
std::vector<ModelEntry> make_registry() {
  return {
      {"ds2", ModelFamily::speech, "models/ds2.h", "DeepSpeech2, CTC", ds2_model_options(),
       make_ds2},
      {"vgg19_bn", ModelFamily::image_classifier, "models/vgg.h", "torchvision's, 16 convs",
       vgg_model_options(), make_vgg19_bn},
      {"vgg16_bn", ModelFamily::image_classifier, "models/vgg.h", "torchvision's, 13 convs",
       vgg_model_options(), make_vgg16_bn},
  };
}

// The model built by `name`'s row, as its family's interface.
template <typename Family>
std::shared_ptr<Family> make_of_family(const std::string& name, const ModelConfig& config,
                                       ModelFamily family) {
  const ModelEntry& entry = model_entry(name);
  SONATA_CHECK(entry.family == family, "model ", name, " (", family_name(entry.family),
               ") is not of the ", family_name(family), " family (that is ",
               name_list(model_names(family)), ")");
  auto model = std::dynamic_pointer_cast<Family>(entry.factory(config));
  SONATA_CHECK(model, "model ", name, " is registered as of the ", family_name(family),
               " family but does not derive from its interface (models/model_family.h)");
  return model;
}

}  // namespace

const std::vector<ModelEntry>& model_registry() {
  static const std::vector<ModelEntry> registry = make_registry();
  return registry;
}

const ModelEntry* find_model(const std::string& name) {
  for (const ModelEntry& entry : model_registry())
    if (entry.name == name) return &entry;
  return nullptr;
}

const ModelEntry& model_entry(const std::string& name) {
  const ModelEntry* entry = find_model(name);
  if (!entry)
    throw Error(str("unknown model '", name, "' (known: ", name_list(model_names(), ", "), ")"));
  return *entry;
}

int64_t ModelConfig::get_int(const std::string& key, int64_t fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  int64_t value = 0;
  const std::string& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    throw Error(str("model option --", key, " expects an integer, got '", text, "'"));
  return value;
}

double ModelConfig::get_double(const std::string& key, double fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  try {
    size_t used = 0;
    const double value = std::stod(it->second, &used);
    if (used == it->second.size()) return value;
  } catch (const std::exception&) {
  }
  throw Error(str("model option --", key, " expects a number, got '", it->second, "'"));
}

std::string ModelConfig::get_choice(const std::string& key, const std::string& fallback,
                                    const std::vector<std::string>& choices) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  std::string accepted;
  for (const std::string& choice : choices) {
    if (choice == it->second) return choice;
    if (!accepted.empty()) accepted.append(", ");
    accepted.append(choice);
  }
  throw Error(
      str("model option --", key, " expects one of ", accepted, ", got '", it->second, "'"));
}

void ModelConfig::check_keys(const std::string& model,
                             const std::vector<std::string>& known) const {
  for (const auto& [key, value] : values_) {
    bool ok = false;
    for (const std::string& k : known) ok = ok || k == key;
    if (!ok) {
      std::string accepted;
      for (const std::string& k : known) accepted += (accepted.empty() ? "--" : ", --") + k;
      throw Error(str("model ", model, " has no option --", key, " (it takes ", accepted, ")"));
    }
  }
}

std::shared_ptr<Module> make_model(const std::string& name, const ModelConfig& config) {
  return model_entry(name).factory(config);
}

std::shared_ptr<SpeechModel> make_speech_model(const std::string& name, const ModelConfig& config) {
  return make_of_family<SpeechModel>(name, config, ModelFamily::speech);
}

std::shared_ptr<ImageClassifier> make_image_classifier(const std::string& name,
                                                       const ModelConfig& config) {
  return make_of_family<ImageClassifier>(name, config, ModelFamily::image_classifier);
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const ModelEntry& entry : model_registry()) names.push_back(entry.name);
  return names;
}

std::vector<std::string> model_names(ModelFamily family) {
  std::vector<std::string> names;
  for (const ModelEntry& entry : model_registry())
    if (entry.family == family) names.push_back(entry.name);
  return names;
}

std::string name_list(const std::vector<std::string>& names, const char* last) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? last : ", ";
    text += names[i];
  }
  return text;
}

}  // namespace sonata
