#pragma once
// Loading named tensors (a safetensors checkpoint, converted torchvision weights) into a
// module: names, shapes and dtypes are checked, and every mismatch is listed in one error.
#include <string>
#include <vector>

#include "engine/nn/module.h"

namespace sonata {

struct LoadStateOptions {
  // Only entries whose names start with one of these are loaded and required (empty: all).
  // {"features."} loads a VGG backbone and leaves a fresh classifier head, as fine-tuning
  // from ImageNet to 16 genres needs.
  std::vector<std::string> only_prefixes;
  // Values of another floating dtype are converted instead of refused (f32 weights into an
  // f64 model, f16 checkpoints into f32).
  bool convert_dtypes = true;
  // Only the module's entries that the tensors hold are loaded, the others left as they are:
  // a pipeline stage loading its own from a checkpoint already checked whole.
  bool only_given = false;
};

struct LoadStateReport {
  std::vector<std::string> loaded, skipped;  // skipped: outside only_prefixes
};

LoadStateReport load_state_dict(Module& module, const NamedTensors& tensors,
                                const LoadStateOptions& options = {});

}  // namespace sonata
