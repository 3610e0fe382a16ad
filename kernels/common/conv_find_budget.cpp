#include "kernels/common/conv_find_budget.h"

namespace sonata::kernels {

ConvLayerKey conv_layer_key(int device, int64_t dtype, int pass, bool tf32, bool deterministic,
                            const Conv2dShape& s) {
  return {device,
          dtype,
          pass,
          int64_t(tf32),
          int64_t(deterministic),
          s.c_in,
          s.c_out,
          s.kh,
          s.kw,
          s.stride_h,
          s.stride_w,
          s.pad_h,
          s.pad_w,
          s.dil_h,
          s.dil_w,
          int64_t(s.channels_last)};
}

bool ConvFindBudget::take(const ConvLayerKey& layer) {
  const std::lock_guard<std::mutex> lock(mutex_);
  int& spent = spent_[layer];
  if (spent >= per_layer_) return false;
  ++spent;
  return true;
}

int ConvFindBudget::spent(const ConvLayerKey& layer) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto found = spent_.find(layer);
  return found == spent_.end() ? 0 : found->second;
}

}  // namespace sonata::kernels
