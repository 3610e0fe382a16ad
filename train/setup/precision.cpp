#include "train/setup/precision.h"

#include <set>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "models/layers/batch_norm.h"

namespace sonata {
namespace {

void collect_batch_norm_names(const Module& module, const std::string& prefix,
                              std::set<std::string>* names) {
  for (const auto& [name, child] : module.children()) {
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    if (dynamic_cast<const BatchNorm*>(child.get())) {
      for (const auto& [tensor_name, tensor] : child->state_dict())
        names->insert(path + "." + tensor_name);
    } else {
      collect_batch_norm_names(*child, path, names);
    }
  }
}

}  // namespace

DType compute_dtype(Precision precision) {
  switch (precision) {
    case Precision::fp16:
      return DType::f16;
    case Precision::bf16:
      return DType::bf16;
    case Precision::fp32:
      break;
  }
  return DType::f32;
}

void cast_for_precision(Module& model, DType dtype) {
  if (dtype == DType::f32) return;
  std::set<std::string> keep;
  collect_batch_norm_names(model, "", &keep);
  NoGradGuard no_grad;
  for (auto& [name, tensor] : model.state_dict())
    if (is_floating(tensor.dtype()) && !keep.count(name)) tensor.set_data(tensor.to(dtype));
}

}  // namespace sonata
