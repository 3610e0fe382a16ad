#pragma once
#include <memory>
#include <utility>

#include "engine/nn/module.h"
#include "engine/ops/batch_norm.h"

namespace sonata {

// torch.nn.BatchNorm1d / BatchNorm2d: weight 1, bias 0, running_mean 0, running_var 1,
// num_batches_tracked (i64) counted in training; momentum 0.1, eps 1e-5.
class BatchNorm : public Module {
 public:
  explicit BatchNorm(int64_t num_features, double eps = 1e-5, double momentum = 0.1,
                     bool affine = true, bool track_running_stats = true);
  Tensor forward(const Tensor& x) override;
  // relu(forward(x)) in one fused pass.
  Tensor forward_relu(const Tensor& x);
  // Whether forward normalises by the batch's statistics (training, or no running stats).
  bool uses_batch_statistics() const { return is_training() || !running_mean_.defined(); }
  // forward_relu(x + bias) for a per-channel bias the caller left out, since the batch mean
  // removes it exactly (a convolution's bias, models/layers/conv_batch_norm.h): the output is
  // forward_relu(x)'s, the running mean gets the bias back (the mean it would have seen), and
  // `bias` gets an exact zero gradient. Only where uses_batch_statistics().
  Tensor forward_relu_without_bias(const Tensor& x, const Tensor& bias);
  // Over a padded batch of sequences x [N, C, T, *] whose sample n has lengths[n] valid frames:
  // masked_batch_norm (engine/ops/masked_batch_norm.h), statistics of the valid frames alone
  // and 0 on the padding, so the result does not depend on how far the batch was padded.
  Tensor forward_masked(const Tensor& x, const Tensor& lengths);
  // Training statistics over every process (SyncBatchNorm); null (the default): this one's.
  void set_stats_reducer(std::shared_ptr<BatchNormStatsReducer> reducer) {
    stats_reducer_ = std::move(reducer);
  }

 private:
  BatchNormOptions options_for_step();

  double eps_, momentum_;
  Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
  std::shared_ptr<BatchNormStatsReducer> stats_reducer_;
};

// Sets `reducer` on every BatchNorm in `module` (torch's convert_sync_batchnorm); returns how
// many. comm/sync_batch_norm.h makes one on a process group.
int64_t set_batch_norm_stats_reducer(Module& module,
                                     const std::shared_ptr<BatchNormStatsReducer>& reducer);

}  // namespace sonata
