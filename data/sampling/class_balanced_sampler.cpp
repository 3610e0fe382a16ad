#include "data/sampling/class_balanced_sampler.h"

#include <map>

#include "base/error.h"
#include "data/sampling/counter_rng.h"

namespace sonata {

ClassBalancedSampler::ClassBalancedSampler(const std::vector<int64_t>& labels,
                                           const SamplerOptions& options,
                                           int64_t num_samples_per_epoch)
    : BatchSampler("ClassBalancedSampler", options, int64_t(labels.size())),
      num_samples_(num_samples_per_epoch == 0 ? int64_t(labels.size()) : num_samples_per_epoch) {
  SONATA_CHECK(num_samples_per_epoch >= 0,
               "ClassBalancedSampler: num_samples_per_epoch must be 0 (the dataset's size) or "
               "positive, got ",
               num_samples_per_epoch);
  // Classes in label order, so the draw of class c means the same class everywhere.
  std::map<int64_t, std::vector<int64_t>> by_label;
  for (size_t i = 0; i < labels.size(); ++i) {
    SONATA_CHECK(labels[i] >= 0, "ClassBalancedSampler: labels[", i, "] is ", labels[i],
                 "; labels must not be negative");
    by_label[labels[i]].push_back(int64_t(i));
  }
  for (auto& [label, items] : by_label) members_.push_back(std::move(items));
  set_batches_per_epoch(
      sampling::batch_count(sampling::rank_share_size(num_samples_, options_), options_),
      int64_t(labels.size()));
}

std::vector<std::vector<int64_t>> ClassBalancedSampler::epoch_batches(int64_t epoch) const {
  CounterRng rng(options_.seed, sampling::stream(epoch, sampling::Purpose::class_draws));
  std::vector<int64_t> draws(static_cast<size_t>(num_samples_));
  for (int64_t& item : draws) {
    const std::vector<int64_t>& items = members_[size_t(rng.below(members_.size()))];
    item = items[size_t(rng.below(items.size()))];
  }
  return sampling::cut_batches(sampling::rank_share(draws, options_), options_);
}

}  // namespace sonata
