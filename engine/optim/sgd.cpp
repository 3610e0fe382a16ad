#include "engine/optim/sgd.h"

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

HyperParameters to_hyper(const SgdOptions& o) {
  return {{"lr", o.lr},
          {"momentum", o.momentum},
          {"dampening", o.dampening},
          {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov ? 1.0 : 0.0}};
}

// One kernel call's worth: parameters that share a device, a dtype and the first-step rule.
struct SgdBatch {
  Device device;
  DType dtype;
  bool first_step;
  std::vector<kernels::SgdTensors> tensors;
};

}  // namespace

SGD::SGD(std::vector<ParamGroup> groups, const SgdOptions& defaults)
    : Optimizer("SGD", std::move(groups), to_hyper(defaults), {"momentum_buffer", "master"}) {
  for (size_t g = 0; g < group_count(); ++g) check_options(g);
}

SGD::SGD(std::vector<Tensor> params, const SgdOptions& defaults)
    : SGD(std::vector<ParamGroup>{{std::move(params), {}}}, defaults) {}

void SGD::check_options(size_t group) const {
  const double lr = option(group, "lr"), momentum = option(group, "momentum");
  const double dampening = option(group, "dampening"), decay = option(group, "weight_decay");
  const double nesterov = option(group, "nesterov");
  SONATA_CHECK(lr >= 0, "SGD: group ", group, " has learning rate ", lr, " < 0");
  SONATA_CHECK(momentum >= 0, "SGD: group ", group, " has momentum ", momentum, " < 0");
  SONATA_CHECK(decay >= 0, "SGD: group ", group, " has weight_decay ", decay, " < 0");
  SONATA_CHECK(nesterov == 0 || nesterov == 1, "SGD: group ", group, " has nesterov ", nesterov,
               " (0 or 1)");
  SONATA_CHECK(nesterov == 0 || (momentum > 0 && dampening == 0), "SGD: group ", group,
               ": Nesterov momentum needs a momentum > 0 and zero dampening");
}

void SGD::step_group(size_t group, const std::vector<size_t>& params, const StepScaling& scaling) {
  kernels::SgdHyper hyper;
  hyper.lr = option(group, "lr");
  hyper.momentum = option(group, "momentum");
  hyper.dampening = option(group, "dampening");
  hyper.weight_decay = option(group, "weight_decay");
  hyper.nesterov = option(group, "nesterov") != 0;
  const bool momentum = hyper.momentum != 0;

  std::vector<Tensor> grads;  // keeps contiguous copies alive through the kernels
  std::vector<SgdBatch> batches;
  for (size_t index : params) {
    grads.push_back(update_grad(index));
    const Tensor& p = param(index);
    const bool first_step = momentum && !state(index).buffers.count("momentum_buffer");
    void* momentum_buffer = momentum ? buffer(index, "momentum_buffer").data_ptr() : nullptr;
    const Tensor master_copy = master(index);
    const kernels::SgdTensors tensors{p.data_ptr(), grads.back().data_ptr(),
                                      master_copy.defined() ? master_copy.data<float>() : nullptr,
                                      momentum_buffer, p.numel()};
    auto batch = std::find_if(batches.begin(), batches.end(), [&](const SgdBatch& b) {
      return b.device == p.device() && b.dtype == p.dtype() && b.first_step == first_step;
    });
    if (batch == batches.end())
      batch = batches.insert(batches.end(), SgdBatch{p.device(), p.dtype(), first_step, {}});
    batch->tensors.push_back(tensors);
  }
  for (const SgdBatch& batch : batches) {
    hyper.first_step = batch.first_step;
    SONATA_BACKEND(batch.device, sgd_step, batch.dtype, batch.tensors.data(),
                   int64_t(batch.tensors.size()), hyper, scaling_pointers(scaling, batch.device));
  }
}

}  // namespace sonata
