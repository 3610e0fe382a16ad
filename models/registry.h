#pragma once
// Models by name ("vgg19_bn", "ds2"), built from string options as the trainer and
// the probe take them on their command lines.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/nn/module.h"

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

std::shared_ptr<Module> make_model(const std::string& name, const ModelConfig& config = {});
std::vector<std::string> model_names();

}  // namespace sonata
