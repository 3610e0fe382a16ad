#include "tools/trainer/init_from.h"

#include <map>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/io/safetensors.h"

namespace sonata {

std::string init_from_weights(Module& model, const std::string& path) {
  const SafetensorsContents file = load_safetensors(path);
  std::map<std::string, Tensor> by_name;
  for (const auto& [name, tensor] : file.tensors) by_name.emplace(name, tensor);

  NoGradGuard no_grad;
  int64_t loaded = 0;
  std::vector<std::string> replaced, absent;
  const NamedTensors targets = model.state_dict();
  for (const auto& [name, target] : targets) {
    const auto found = by_name.find(name);
    if (found == by_name.end()) {
      absent.push_back(name);
      continue;
    }
    const Tensor& source = found->second;
    if (source.shape() != target.shape()) {
      replaced.push_back(
          str(name, " ", shape_str(source.shape()), " -> ", shape_str(target.shape())));
      continue;
    }
    Tensor value = source.to(target.device());
    if (value.dtype() != target.dtype()) value = value.to(target.dtype());
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
