#include "models/layers/linear.h"

#include "engine/ops.h"
#include "models/layers/init.h"

namespace sonata {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias) {
  weight_ =
      register_parameter("weight", default_uniform_init({out_features, in_features}, in_features));
  if (bias) bias_ = register_parameter("bias", default_uniform_init({out_features}, in_features));
}

Tensor Linear::forward(const Tensor& x) {
  if (x.dim() == 2) return bias_.defined() ? addmm(bias_, x, weight_.t()) : matmul(x, weight_.t());
  // Fold leading dims into rows so the product is one GEMM.
  Shape out_shape = x.shape();
  out_shape.back() = weight_.shape()[0];
  const Tensor rows = x.reshape({-1, x.shape().back()});
  const Tensor y = bias_.defined() ? addmm(bias_, rows, weight_.t()) : matmul(rows, weight_.t());
  return y.reshape(out_shape);
}

}  // namespace sonata
