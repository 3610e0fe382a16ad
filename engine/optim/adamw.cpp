#include "engine/optim/adamw.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "engine/ops/backend.h"
#include "kernels/cpu/optimizer.h"
#if SONATA_WITH_CUDA
#include "kernels/cuda/optimizer.h"
#endif

namespace sonata {
namespace {

HyperParameters to_hyper(const AdamOptions& o) {
  return {{"lr", o.lr},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"amsgrad", o.amsgrad ? 1.0 : 0.0}};
}

// One kernel call's worth: parameters that share a device, a dtype and a step count (the
// bias corrections depend on it; it differs only for parameters that missed gradients).
struct AdamBatch {
  Device device;
  DType dtype;
  int64_t step;
  std::vector<kernels::AdamTensors> tensors;
};

}  // namespace

Adam::Adam(const char* kind, bool decoupled_weight_decay, std::vector<ParamGroup> groups,
           const AdamOptions& defaults)
    : Optimizer(kind, std::move(groups), to_hyper(defaults),
                {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "master"}),
      decoupled_weight_decay_(decoupled_weight_decay) {
  for (size_t g = 0; g < group_count(); ++g) check_options(g);
}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : Adam("Adam", false, std::move(groups), defaults) {}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& defaults)
    : Adam(std::vector<ParamGroup>{{std::move(params), {}}}, defaults) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : Adam("AdamW", true, std::move(groups), defaults) {}

AdamW::AdamW(std::vector<Tensor> params, const AdamOptions& defaults)
    : AdamW(std::vector<ParamGroup>{{std::move(params), {}}}, defaults) {}

void Adam::check_options(size_t group) const {
  const double lr = option(group, "lr"), eps = option(group, "eps");
  const double beta1 = option(group, "beta1"), beta2 = option(group, "beta2");
  const double decay = option(group, "weight_decay"), amsgrad = option(group, "amsgrad");
  SONATA_CHECK(lr >= 0, kind(), ": group ", group, " has learning rate ", lr, " < 0");
  SONATA_CHECK(eps >= 0, kind(), ": group ", group, " has eps ", eps, " < 0");
  SONATA_CHECK(beta1 >= 0 && beta1 < 1, kind(), ": group ", group, " has beta1 ", beta1,
               " outside [0, 1)");
  SONATA_CHECK(beta2 >= 0 && beta2 < 1, kind(), ": group ", group, " has beta2 ", beta2,
               " outside [0, 1)");
  SONATA_CHECK(decay >= 0, kind(), ": group ", group, " has weight_decay ", decay, " < 0");
  SONATA_CHECK(amsgrad == 0 || amsgrad == 1, kind(), ": group ", group, " has amsgrad ", amsgrad,
               " (0 or 1)");
}

void Adam::step_group(size_t group, const std::vector<size_t>& params, const StepScaling& scaling) {
  kernels::AdamHyper hyper;
  hyper.lr = option(group, "lr");
  hyper.beta1 = option(group, "beta1");
  hyper.beta2 = option(group, "beta2");
  hyper.eps = option(group, "eps");
  hyper.weight_decay = option(group, "weight_decay");
  hyper.amsgrad = option(group, "amsgrad") != 0;
  hyper.decay =
      decoupled_weight_decay_ ? kernels::AdamWeightDecay::decoupled : kernels::AdamWeightDecay::l2;

  std::vector<Tensor> grads;  // keeps contiguous copies alive through the kernels
  std::vector<AdamBatch> batches;
  for (size_t index : params) {
    grads.push_back(update_grad(index));
    const Tensor& p = param(index);
    const int64_t step = ++state(index).step;
    const Tensor master_copy = master(index);
    const kernels::AdamTensors tensors{
        p.data_ptr(),
        grads.back().data_ptr(),
        master_copy.defined() ? master_copy.data<float>() : nullptr,
        buffer(index, "exp_avg").data_ptr(),
        buffer(index, "exp_avg_sq").data_ptr(),
        hyper.amsgrad ? buffer(index, "max_exp_avg_sq").data_ptr() : nullptr,
        p.numel()};
    auto batch = std::find_if(batches.begin(), batches.end(), [&](const AdamBatch& b) {
      return b.device == p.device() && b.dtype == p.dtype() && b.step == step;
    });
    if (batch == batches.end())
      batch = batches.insert(batches.end(), AdamBatch{p.device(), p.dtype(), step, {}});
    batch->tensors.push_back(tensors);
  }
  for (const AdamBatch& batch : batches) {
    hyper.step = batch.step;
    SONATA_BACKEND(batch.device, adam_step, batch.dtype, batch.tensors.data(),
                   int64_t(batch.tensors.size()), hyper, scaling_pointers(scaling, batch.device));
  }
}

}  // namespace sonata
