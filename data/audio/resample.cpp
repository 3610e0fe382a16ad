#include "data/audio/resample.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "kernels/cpu/resample.h"

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
