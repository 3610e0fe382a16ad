#include "data/audio/resample.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

#include "base/error.h"
#include "kernels/cpu/resample.h"
#if SONATA_WITH_CUDA
#include "engine/cuda/stream.h"
#include "kernels/cuda/resample.h"
#endif

namespace sonata {
namespace {

using Filter = kernels::cpu::ResampleFilter;

// A corpus has a handful of source rates, so the cache never grows large. Filters are built
// outside the lock (44100 -> 16000 takes a while) and never freed while a caller holds one.
std::shared_ptr<const Filter> filter_for(int64_t from_rate, int64_t to_rate) {
  static std::mutex mutex;
  static std::map<std::pair<int64_t, int64_t>, std::shared_ptr<const Filter>> filters;
  const std::pair<int64_t, int64_t> key(from_rate, to_rate);
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto found = filters.find(key);
    if (found != filters.end()) return found->second;
  }
  auto built =
      std::make_shared<const Filter>(kernels::cpu::make_resample_filter(from_rate, to_rate));
  std::lock_guard<std::mutex> lock(mutex);
  // Two threads may have built the same filter; the first one stored wins.
  return filters.emplace(key, std::move(built)).first->second;
}

#if SONATA_WITH_CUDA
// A filter's arrays on one device, next to the host filter they copy.
struct DeviceFilter {
  std::shared_ptr<const Filter> host;
  Tensor first, count, weights;
};

std::shared_ptr<const DeviceFilter> device_filter_for(int64_t from_rate, int64_t to_rate,
                                                      Device device) {
  static std::mutex mutex;
  static std::map<std::tuple<int64_t, int64_t, int>, std::shared_ptr<const DeviceFilter>> filters;
  const std::tuple<int64_t, int64_t, int> key(from_rate, to_rate, device.index);
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = filters.find(key);
  if (found != filters.end()) return found->second;
  auto built = std::make_shared<DeviceFilter>();
  built->host = filter_for(from_rate, to_rate);
  const Filter& host = *built->host;
  built->first = from_vector(host.first, {host.target}, device);
  built->count = from_vector(host.count, {host.target}, device);
  built->weights =
      from_vector(host.weights, {host.target, host.stride}, TensorOptions{}.with(device));
  return filters.emplace(key, std::move(built)).first->second;
}
#endif

}  // namespace

int64_t resampled_length(int64_t length, int64_t from_rate, int64_t to_rate) {
  return kernels::cpu::resampled_length(length, from_rate, to_rate);
}

std::vector<float> resample(std::span<const float> samples, int64_t from_rate, int64_t to_rate) {
  const int64_t length = int64_t(samples.size());
  std::vector<float> out(size_t(resampled_length(length, from_rate, to_rate)));
  if (from_rate == to_rate) {
    std::copy(samples.begin(), samples.end(), out.begin());
    return out;
  }
  const std::shared_ptr<const Filter> filter = filter_for(from_rate, to_rate);
  kernels::cpu::resample(*filter, samples.data(), length, out.data());
  return out;
}

}  // namespace sonata

namespace sonata {

Tensor resample(const Tensor& samples, int64_t from_rate, int64_t to_rate) {
  SONATA_CHECK(samples.defined() && samples.dtype() == DType::f32 && samples.dim() == 1,
               "resample: samples must be a 1-D f32 tensor");
  if (samples.device().is_cpu()) {
    const std::vector<float> host = samples.to_vector<float>();
    const std::vector<float> out = resample(std::span<const float>(host), from_rate, to_rate);
    return from_vector(out, {int64_t(out.size())});
  }
#if SONATA_WITH_CUDA
  const int64_t length = samples.size(0);
  const int64_t outputs = resampled_length(length, from_rate, to_rate);
  if (from_rate == to_rate) return samples.clone();
  const Device device = samples.device();
  const std::shared_ptr<const DeviceFilter> filter = device_filter_for(from_rate, to_rate, device);
  const Filter& host = *filter->host;
  const kernels::cuda::ResampleFilterView view{host.orig,
                                               host.target,
                                               host.width,
                                               host.stride,
                                               filter->first.data<int64_t>(),
                                               filter->count.data<int64_t>(),
                                               filter->weights.data<float>()};
  const Tensor input = samples.contiguous();
  Tensor out = empty({outputs}, TensorOptions{}.with(device));
  kernels::cuda::resample(view, input.data<float>(), length, out.data<float>(), outputs,
                          current_stream(device.index));
  return out;
#else
  throw Error(str("resample on ", samples.device().str(), ": ", cuda_unavailable_reason()));
#endif
}

}  // namespace sonata
