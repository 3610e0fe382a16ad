#include "engine/nn/state_dict.h"

#include <map>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"

namespace sonata {
namespace {
bool selected(const std::string& name, const std::vector<std::string>& prefixes) {
  if (prefixes.empty()) return true;
  for (const std::string& p : prefixes)
    if (name.starts_with(p)) return true;
  return false;
}
}  // namespace

LoadStateReport load_state_dict(Module& module, const NamedTensors& tensors,
                                const LoadStateOptions& options) {
  std::map<std::string, Tensor> given;
  for (const auto& [name, t] : tensors) given[name] = t;
  std::vector<std::string> problems;
  LoadStateReport report;
  std::vector<std::pair<Tensor, Tensor>> assignments;  // target, source: applied only if all fit
  for (auto& [name, target] : module.state_dict()) {
    if (!selected(name, options.only_prefixes)) {
      report.skipped.push_back(name);
      continue;
    }
    auto it = given.find(name);
    if (it == given.end() && options.only_given) {
      report.skipped.push_back(name);
      continue;
    }
    if (it == given.end()) {
      problems.push_back(str("missing ", name));
      continue;
    }
    const Tensor& source = it->second;
    if (source.shape() != target.shape()) {
      problems.push_back(str(name, ": shape ", shape_str(source.shape()), " in the file, ",
                             shape_str(target.shape()), " in the model"));
    } else if (source.dtype() != target.dtype() &&
               !(options.convert_dtypes && is_floating(source.dtype()) &&
                 is_floating(target.dtype()))) {
      problems.push_back(str(name, ": dtype ", dtype_name(source.dtype()), " in the file, ",
                             dtype_name(target.dtype()), " in the model"));
    } else {
      assignments.emplace_back(target, source);
      report.loaded.push_back(name);
    }
    given.erase(it);
  }
  for (const auto& [name, t] : given)
    if (selected(name, options.only_prefixes)) problems.push_back(str("unexpected ", name));
  if (!problems.empty()) {
    std::string text = str("cannot load the weights: ", problems.size(), " mismatch",
                           problems.size() == 1 ? "" : "es");
    for (const std::string& p : problems) text += "\n  " + p;
    throw Error(text);
  }
  NoGradGuard no_grad;
  for (auto& [target, source] : assignments) {
    Tensor t = target;
    t.copy_(source);
  }
  return report;
}

}  // namespace sonata
