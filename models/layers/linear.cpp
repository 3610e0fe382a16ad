#include "models/layers/linear.h"

#include "base/error.h"
#include "engine/deferred_init.h"
#include "engine/ops.h"
#include "models/layers/init.h"

namespace sonata {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias) {
  weight_ =
      register_parameter("weight", default_uniform_init({out_features, in_features}, in_features));
  if (bias) bias_ = register_parameter("bias", default_uniform_init({out_features}, in_features));
}

Linear::Linear(FromTensors, Tensor weight, Tensor bias) {
  weight_ = register_parameter("weight", std::move(weight));
  if (bias.defined()) bias_ = register_parameter("bias", std::move(bias));
}

std::shared_ptr<Linear> Linear::rows(int64_t begin, int64_t end) const {
  SONATA_CHECK(0 <= begin && begin < end && end <= out_features(), "Linear: rows [", begin, ", ",
               end, ") lie outside its ", out_features(), " output features");
  // Deferred weights give deferred rows (engine/deferred_init.h).
  Tensor weight = copy_rows(weight_, begin, end);
  Tensor bias = bias_.defined() ? copy_rows(bias_, begin, end) : Tensor();
  return std::shared_ptr<Linear>(new Linear(FromTensors{}, std::move(weight), std::move(bias)));
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

ModelLayer linear_layer(const std::string& prefix, const std::shared_ptr<Linear>& linear) {
  ModelLayer layer;
  layer.name = prefix;
  layer.modules = {{prefix, linear}};
  Module* module = linear.get();
  layer.forward = [module](const LayerValue& in) {
    return LayerValue{module->forward(in.x), in.lengths};
  };
  layer.rows = linear->out_features();
  layer.piece = [prefix, linear](int64_t begin, int64_t end) {
    const std::shared_ptr<Linear> part = linear->rows(begin, end);
    const int64_t in_features = linear->in_features();
    const RowShard shard{begin, end, linear->out_features()};
    ModelLayer piece;
    piece.modules = {{prefix, part}};
    piece.forward = [part, in_features, shard](const LayerValue& in) {
      return run_row_piece(*part, in_features, shard, in);
    };
    return piece;
  };
  return layer;
}

}  // namespace sonata
