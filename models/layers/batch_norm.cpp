#include "models/layers/batch_norm.h"

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/masked_batch_norm.h"
#include "engine/ops/zero_gradient.h"

namespace sonata {

BatchNorm::BatchNorm(int64_t num_features, double eps, double momentum, bool affine,
                     bool track_running_stats)
    : eps_(eps), momentum_(momentum) {
  if (affine) {
    weight_ = register_parameter("weight", ones({num_features}));
    bias_ = register_parameter("bias", zeros({num_features}));
  }
  if (track_running_stats) {
    running_mean_ = register_buffer("running_mean", zeros({num_features}));
    running_var_ = register_buffer("running_var", ones({num_features}));
    num_batches_tracked_ =
        register_buffer("num_batches_tracked", zeros({}, TensorOptions{}.with(DType::i64)));
  }
}

BatchNormOptions BatchNorm::options_for_step() {
  // Eval uses running statistics only when they are tracked, as torch does.
  const bool use_batch_stats = is_training() || !running_mean_.defined();
  if (is_training() && num_batches_tracked_.defined()) {
    NoGradGuard no_grad;
    num_batches_tracked_.add_(ones({}, num_batches_tracked_.options()));
  }
  return {use_batch_stats, momentum_, eps_};
}

Tensor BatchNorm::forward(const Tensor& x) {
  const BatchNormOptions options = options_for_step();
  // Evaluation (running statistics) never communicates.
  return batch_norm(x, weight_, bias_, running_mean_, running_var_, options,
                    options.training ? stats_reducer_ : nullptr);
}

Tensor BatchNorm::forward_relu(const Tensor& x) {
  const BatchNormOptions options = options_for_step();
  return batch_norm_relu(x, weight_, bias_, running_mean_, running_var_, options,
                         options.training ? stats_reducer_ : nullptr);
}

Tensor BatchNorm::forward_relu_without_bias(const Tensor& x, const Tensor& bias) {
  SONATA_CHECK(uses_batch_statistics(),
               "BatchNorm: a left-out bias cancels only under batch statistics, not in eval mode");
  Tensor out = forward_relu(pass_with_zero_gradient(x, bias));
  if (running_mean_.defined()) {
    // (1 - m) * running + m * (mean + bias): the update above added the first two terms.
    NoGradGuard no_grad;
    running_mean_.add_(bias.detach().to(running_mean_.dtype()), momentum_);
  }
  return out;
}

Tensor BatchNorm::forward_masked(const Tensor& x, const Tensor& lengths) {
  const BatchNormOptions options = options_for_step();
  return masked_batch_norm(x, lengths, weight_, bias_, running_mean_, running_var_, options,
                           options.training ? stats_reducer_ : nullptr);
}

int64_t set_batch_norm_stats_reducer(Module& module,
                                     const std::shared_ptr<BatchNormStatsReducer>& reducer) {
  int64_t count = 0;
  if (auto* batch_norm = dynamic_cast<BatchNorm*>(&module)) {
    batch_norm->set_stats_reducer(reducer);
    ++count;
  }
  for (const auto& [name, child] : module.children())
    count += set_batch_norm_stats_reducer(*child, reducer);
  return count;
}

}  // namespace sonata
