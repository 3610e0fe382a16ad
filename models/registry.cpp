#include "models/registry.h"

#include <charconv>
#include <functional>

#include "base/error.h"
#include "models/ds2.h"
#include "models/vgg.h"

namespace sonata {
namespace {

using Factory = std::function<std::shared_ptr<Module>(const ModelConfig&)>;

// One explicit table: static self-registration would be dropped by the linker from a
// static library.
const std::vector<std::pair<std::string, Factory>>& factories() {
  static const std::vector<std::pair<std::string, Factory>> table = {
      {"vgg19_bn", [](const ModelConfig& c) { return make_vgg19_bn(c); }},
      {"ds2", [](const ModelConfig& c) { return make_ds2(c); }},
  };
  return table;
}

}  // namespace

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
  for (const auto& [model, factory] : factories())
    if (model == name) return factory(config);
  std::string names;
  for (const std::string& n : model_names()) names += (names.empty() ? "" : ", ") + n;
  throw Error(str("unknown model '", name, "' (known: ", names, ")"));
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& [model, factory] : factories()) names.push_back(model);
  return names;
}

}  // namespace sonata
