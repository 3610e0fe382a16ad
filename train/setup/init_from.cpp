#include "train/setup/init_from.h"

#include <map>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/deferred_init.h"
#include "engine/io/safetensors.h"

namespace sonata {

std::string init_from_weights(Module& model, const std::string& path) {
  const NamedTensors targets = model.state_dict();
  // A model built deferred (a pipeline stage's) reads the file when each stage materialises
  // its own tensors: here only the header, so that no rank holds the whole file.
  bool any_eager = false;
  for (const auto& [name, target] : targets) any_eager = any_eager || !is_deferred(target);
  std::map<std::string, TensorSpec> specs;
  for (const TensorSpec& spec : read_safetensors_header(path).tensors) specs[spec.name] = spec;
  std::map<std::string, Tensor> by_name;
  if (any_eager)
    for (const auto& [name, tensor] : load_safetensors(path).tensors) by_name.emplace(name, tensor);

  NoGradGuard no_grad;
  int64_t loaded = 0;
  std::vector<std::string> replaced, absent;
  for (const auto& [name, target] : targets) {
    const auto found = specs.find(name);
    if (found == specs.end()) {
      absent.push_back(name);
      continue;
    }
    const TensorSpec& source = found->second;
    if (source.shape != target.shape()) {
      replaced.push_back(
          str(name, " ", shape_str(source.shape), " -> ", shape_str(target.shape())));
      continue;
    }
    Tensor value;
    if (is_deferred(target)) {
      value = deferred_from_file(path, name, source.shape, source.dtype, target.device(),
                                 target.dtype());
    } else {
      value = by_name.at(name).to(target.device());
      if (value.dtype() != target.dtype()) value = value.to(target.dtype());
    }
    Tensor handle = target;
    handle.set_data(value);
    ++loaded;
  }
  SONATA_CHECK(2 * loaded >= int64_t(targets.size()), "--init-from ", path, ": only ", loaded,
               " of the model's ", targets.size(),
               " tensors match it by name and shape (is it for another model?); first missing: ",
               absent.empty() ? replaced.front() : absent.front());
  std::string line = str("initialised ", loaded, " of ", targets.size(), " tensors from ", path);
  if (!replaced.empty()) {
    line += str("; kept fresh (shape differs): ", replaced.front());
    if (replaced.size() > 1) line += str(" and ", replaced.size() - 1, " more");
  }
  if (!absent.empty()) line += str("; not in the file: ", absent.size());
  return line;
}

}  // namespace sonata
