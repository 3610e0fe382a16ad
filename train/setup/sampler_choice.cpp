#include "train/setup/sampler_choice.h"

#include "data/sampling/class_balanced_sampler.h"
#include "data/sampling/length_bucket_sampler.h"
#include "data/sampling/random_batch_sampler.h"

namespace sonata {

std::unique_ptr<BatchSampler> make_sampler(const TrainerOptions& o, const Task& task,
                                           int64_t replica, int64_t replicas) {
  SamplerOptions sampling;
  sampling.batch_size = o.batch_size;
  sampling.seed = o.seed;
  sampling.rank = replica;
  sampling.world_size = replicas;
  switch (task.sampling()) {
    case SamplingKind::length_buckets:
      return std::make_unique<LengthBucketSampler>(task.train_lengths(), sampling,
                                                   /*bucket_size_multiplier=*/100, o.sortagrad);
    case SamplingKind::class_balanced:
      return std::make_unique<ClassBalancedSampler>(task.train_labels(), sampling);
    case SamplingKind::uniform:
      break;
  }
  return std::make_unique<RandomBatchSampler>(task.train_items(), sampling);
}

}  // namespace sonata
