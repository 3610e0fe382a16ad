#include "models/layers/simple.h"

#include "engine/ops.h"
#include "engine/ops/dropout.h"
#include "engine/ops/pool.h"

namespace sonata {

Tensor ReLU::forward(const Tensor& x) {
  return relu(x);
}
Tensor Hardtanh::forward(const Tensor& x) {
  return hardtanh(x, min_, max_);
}
Tensor Dropout::forward(const Tensor& x) {
  return dropout(x, p_, is_training());
}
Tensor Flatten::forward(const Tensor& x) {
  return x.flatten(start_, end_);
}
Tensor MaxPool2d::forward(const Tensor& x) {
  return max_pool2d(x, kernel_, stride_, padding_).first;
}
Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  return adaptive_avg_pool2d(x, output_size_);
}

}  // namespace sonata
