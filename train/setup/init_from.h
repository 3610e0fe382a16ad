#pragma once
// --init-from: weights from a safetensors file (a sonata checkpoint's model.safetensors, or
// torchvision's VGG19_BN converted by tools/convert_torch_weights.py) loaded into a fresh
// model for fine-tuning. Tensors whose name and shape match are loaded; a tensor of the
// model whose file entry has another shape (the 1000-class ImageNet head against 16
// genres) keeps its fresh initialisation, which is the point of fine-tuning. Returns one
// line saying what was loaded and what was replaced; throws when fewer than half of the
// model's tensors match (the file is for another model).
#include <string>

#include "engine/nn/module.h"

namespace sonata {

std::string init_from_weights(Module& model, const std::string& path);

}  // namespace sonata
