// ConstantQ's CUDA path: the filter bank uploaded once per device, the launch.
#include <map>
#include <mutex>

#include "base/error.h"
#include "data/features/cqt.h"
#if SONATA_WITH_CUDA
#include "engine/cuda/stream.h"
#include "kernels/cuda/cqt.h"
#endif

namespace sonata {

struct CqtDeviceBank {
  std::mutex mutex;
  // device index -> taps, first (i64), re, im (f32), on that device.
  std::map<int, std::vector<Tensor>> banks;
};

std::shared_ptr<CqtDeviceBank> make_cqt_device_bank() {
  return std::make_shared<CqtDeviceBank>();
}

#if SONATA_WITH_CUDA

Tensor ConstantQ::db_batch(const Tensor& samples) const {
  SONATA_CHECK(samples.defined() && samples.device().is_cuda() && samples.dtype() == DType::f32 &&
                   samples.dim() == 2 && samples.size(1) > 0,
               "cqt db_batch: samples must be a [clips, samples] f32 tensor on a CUDA device, "
               "with at least one sample per clip");
  const Device device = samples.device();
  const TensorOptions on_device = TensorOptions{}.with(device);
  const int64_t clips = samples.size(0), length = samples.size(1);
  std::vector<Tensor> bank;
  {
    const std::lock_guard<std::mutex> lock(device_bank_->mutex);
    auto found = device_bank_->banks.find(device.index);
    if (found == device_bank_->banks.end()) {
      const int64_t bins = bank_.bins, taps = int64_t(bank_.re.size());
      found =
          device_bank_->banks
              .emplace(device.index, std::vector<Tensor>{from_vector(bank_.taps, {bins}, device),
                                                         from_vector(bank_.first, {bins}, device),
                                                         from_vector(bank_.re, {taps}, on_device),
                                                         from_vector(bank_.im, {taps}, on_device)})
              .first;
    }
    bank = found->second;
  }
  const kernels::cuda::CqtDeviceBankView view{bank_.bins, bank[0].data<int64_t>(),
                                              bank[1].data<int64_t>(), bank[2].data<float>(),
                                              bank[3].data<float>()};
  const Tensor input = samples.contiguous();
  Tensor out = empty({clips, bank_.bins, frames(length)}, on_device);
  kernels::cuda::cqt_db(view, input.data<float>(), clips, length, config_.hop_length,
                        config_.top_db, out.data<float>(), current_stream(device.index));
  return out;
}

#else

Tensor ConstantQ::db_batch(const Tensor& samples) const {
  throw Error(str("cqt db_batch on ", samples.defined() ? samples.device().str() : "cuda", ": ",
                  cuda_unavailable_reason()));
}

#endif

}  // namespace sonata
