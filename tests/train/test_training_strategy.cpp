// The training strategy a run gets (train/strategy/): which one the options and the
// world call for, the error for a pipeline that does not divide the world, and the sampler
// the task asks for (Task::sampling(), not the model's name).
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "data/sampling/class_balanced_sampler.h"
#include "data/sampling/length_bucket_sampler.h"
#include "data/sampling/random_batch_sampler.h"
#include "engine/amp/loss_scaler.h"
#include "engine/ops.h"
#include "engine/optim/sgd.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/weight_task.h"
#include "train/setup/sampler_choice.h"
#include "train/setup/strategy_choice.h"
#include "train/tasks/class_task.h"
#include "train/tasks/speech_task.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

// Eight items of lengths 1..8 in classes 0/1, sampled as `kind` says; y = w . x (WeightTask's
// layer and loss).
class SamplingTask : public WeightTask {
 public:
  explicit SamplingTask(SamplingKind kind) : WeightTask(2, "sampling"), kind_(kind) {}
  int64_t train_items() const override { return 8; }
  std::vector<int64_t> train_lengths() const override { return {1, 2, 3, 4, 5, 6, 7, 8}; }
  std::vector<int64_t> train_labels() const override { return {0, 1, 0, 1, 0, 1, 0, 1}; }
  SamplingKind sampling() const override { return kind_; }
  HostBatch prepare(const std::vector<int64_t>& items, int64_t) const override {
    return {{{"input", ones({2}), true}}, int64_t(items.size()), 0.0};
  }

 private:
  SamplingKind kind_;
};

TrainerOptions with_stages(int64_t stages) {
  TrainerOptions options;
  options.pipeline_stages = stages;
  return options;
}

}  // namespace

TEST_CASE("training strategy: the options and the world choose it", "[trainer][strategy]") {
  CHECK(choose_strategy(with_stages(1), 1) == StrategyKind::single_process);
  CHECK(choose_strategy(with_stages(1), 2) == StrategyKind::data_parallel);
  CHECK(choose_strategy(with_stages(1), 3) == StrategyKind::data_parallel);
  CHECK(choose_strategy(with_stages(2), 2) == StrategyKind::pipeline);
  CHECK(choose_strategy(with_stages(3), 3) == StrategyKind::pipeline);
  CHECK(choose_strategy(with_stages(2), 4) == StrategyKind::hybrid);
  CHECK(choose_strategy(with_stages(2), 6) == StrategyKind::hybrid);
  CHECK(std::string(strategy_name(StrategyKind::hybrid)) == "hybrid");
  // Stages that do not divide the world, or a pipeline of one process, are refused.
  CHECK_THROWS_WITH(choose_strategy(with_stages(2), 3),
                    Contains("--pipeline-stages 2 needs a multiple of 2 processes") &&
                        Contains("this run has 3"));
  CHECK_THROWS_WITH(choose_strategy(with_stages(2), 1), Contains("--pipeline-stages 2"));
  CHECK_THROWS_WITH(choose_strategy(with_stages(3), 4), Contains("--pipeline-stages 3"));
}

TEST_CASE("training strategy: one process steps alone, and a pipeline needs a world",
          "[trainer][strategy]") {
  SamplingTask task(SamplingKind::uniform);
  const TrainerOptions options = with_stages(1);
  std::unique_ptr<TrainingStrategy> strategy =
      make_training_strategy(options, task, nullptr, Device::cpu());
  CHECK(strategy->kind() == StrategyKind::single_process);
  CHECK(strategy->replica() == 0);
  CHECK(strategy->replicas() == 1);
  CHECK(strategy->describe(4).empty());
  CHECK(strategy->parameters().size() == 1);
  CHECK(strategy->sum_over_ranks({1.5, 2.0}) == std::vector<double>{1.5, 2.0});
  // One process holds everything (the identity map): the optimizer steps every parameter,
  // the decision to save asks no other rank, and a checkpoint is written only where there
  // is a writer (elsewhere its state is not even captured).
  StateOwnership& ownership = strategy->ownership();
  CHECK(dynamic_cast<IdentityOwnership*>(&ownership));
  const std::vector<ParamGroup> groups =
      ownership.optimizer_groups({ParamGroup{task.model().parameters(), {}}});
  REQUIRE(groups.size() == 1);
  REQUIRE(groups[0].params.size() == 1);
  CHECK(groups[0].params[0].same(task.model().parameters()[0]));
  CHECK(ownership.on_any_holder(true));
  CHECK_FALSE(ownership.on_any_holder(false));
  bool captured = false;
  const auto capture = [&] {
    captured = true;
    return TrainingState{};
  };
  CHECK(ownership.write_checkpoint(nullptr, capture, 1, std::nullopt).empty());
  CHECK_FALSE(captured);

  // Two micro-batches of 3 and 2 items, stepped as the loop steps them (train_loop.cpp):
  // d(w . 1)/dw = 1 each, averaged over the two.
  std::vector<HostBatch> batches{task.prepare({0, 1, 2}, 0), task.prepare({3, 4}, 0)};
  for (size_t m = 0; m < batches.size(); ++m) {
    strategy->before_micro_batch(m, batches.size());
    (batch_loss(task, batches[m], Device::cpu()) * 0.5).backward();
    strategy->after_micro_batch();
  }
  strategy->reduce_gradients();
  LossScaler scaler(Device::cpu());
  const Tensor norm = strategy->agree_and_clip(scaler, strategy->parameters(), 0.0);
  CHECK(norm.item() == Approx(std::sqrt(2.0)));

  CHECK_THROWS_WITH(make_training_strategy(with_stages(2), task, nullptr, Device::cpu()),
                    Contains("--pipeline-stages 2 needs a multiple of 2 processes"));
}

TEST_CASE("sampler choice: the task's sampling picks the sampler", "[trainer][strategy]") {
  TrainerOptions options;
  options.model = "vgg19_bn";  // the model's name no longer decides
  options.batch_size = 2;
  const auto sampler_for = [&](SamplingKind kind) {
    return make_sampler(options, SamplingTask(kind), /*replica=*/1, /*replicas=*/2);
  };
  const std::unique_ptr<BatchSampler> buckets = sampler_for(SamplingKind::length_buckets);
  CHECK(dynamic_cast<LengthBucketSampler*>(buckets.get()));
  CHECK(dynamic_cast<ClassBalancedSampler*>(sampler_for(SamplingKind::class_balanced).get()));
  CHECK(dynamic_cast<RandomBatchSampler*>(sampler_for(SamplingKind::uniform).get()));
  // The shard and the batch as given.
  CHECK(buckets->options().rank == 1);
  CHECK(buckets->options().world_size == 2);
  CHECK(buckets->options().batch_size == 2);
  CHECK(buckets->batches_per_epoch() == 2);
}

#if SONATA_WITH_SNDFILE
TEST_CASE("sampler choice: speech asks for length buckets, classes for uniform or balanced",
          "[trainer][strategy]") {
  TemporaryFolder folder("sampler_choice");
  TrainerOptions speech;
  speech.model = "ds2";
  speech.model_config = {{"conv-channels", "4"}, {"hidden", "16"}, {"layers", "1"}};
  speech.features.n_mels = 40;
  speech.workers = 1;
  speech.train_manifest = write_letters_corpus(folder.path().string(), "train", 3, 5);
  CHECK(SpeechTask(speech, Vocabulary()).sampling() == SamplingKind::length_buckets);

  TrainerOptions images;
  images.model = "vgg19_bn";
  images.model_config = {{"width", "0.0625"}};
  images.train_manifest = write_tone_tracks(folder.path().string(), 2);
  images.features.sample_rate = 16000;
  images.slice_seconds = 1.0;
  images.image_height = 24;
  images.image_width = 20;
  images.workers = 1;
  CHECK(ClassTask(images).sampling() == SamplingKind::uniform);
  images.class_balanced = true;
  CHECK(ClassTask(images).sampling() == SamplingKind::class_balanced);
}
#endif
