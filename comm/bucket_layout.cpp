#include "comm/bucket_layout.h"

#include <algorithm>
#include <map>

#include "base/error.h"

namespace sonata {

std::vector<std::vector<size_t>> assign_buckets(const std::vector<Tensor>& parameters,
                                                const std::vector<size_t>& order, int64_t first_cap,
                                                int64_t cap) {
  SONATA_CHECK(order.size() == parameters.size(), "assign_buckets: the order lists ", order.size(),
               " parameters but there are ", parameters.size());
  struct Open {
    std::vector<size_t> params;
    int64_t bytes = 0;
    bool first = true;
  };
  std::map<DType, Open> open;
  std::vector<std::vector<size_t>> buckets;
  for (size_t i : order) {
    SONATA_CHECK(i < parameters.size(), "assign_buckets: parameter index ", i, " is out of range");
    const Tensor& p = parameters[i];
    Open& bucket = open[p.dtype()];
    bucket.params.push_back(i);
    bucket.bytes += p.numel() * int64_t(dtype_size(p.dtype()));
    if (bucket.bytes >= (bucket.first ? first_cap : cap)) {
      buckets.push_back(std::move(bucket.params));
      bucket = Open{{}, 0, false};
    }
  }
  for (auto& [dtype, bucket] : open)
    if (!bucket.params.empty()) buckets.push_back(std::move(bucket.params));

  std::vector<size_t> position(parameters.size());
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  std::stable_sort(buckets.begin(), buckets.end(), [&](const auto& a, const auto& b) {
    return position[a.back()] < position[b.back()];
  });
  return buckets;
}

void Fnv1a::add(uint64_t value) {
  for (int byte = 0; byte < 8; ++byte) {
    hash_ ^= (value >> (8 * byte)) & 0xffu;
    hash_ *= 0x100000001b3ull;
  }
}

}  // namespace sonata
