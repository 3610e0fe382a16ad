#pragma once
// What a tensor is without its data: the name, dtype and shape that a file's header or a
// peer's manifest says of it, known before the bytes are.
#include <string>

#include "engine/tensor.h"

namespace sonata {

struct TensorSpec {
  std::string name;
  DType dtype;
  Shape shape;
};

}  // namespace sonata
