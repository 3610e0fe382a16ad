// make_training_strategy on the comm tests' world: one process steps alone, more step as
// data parallel (the gradients averaged over the ranks by the strategy's step), and a
// pipeline whose stages do not divide the world is refused before any collective.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops.h"
#include "tests/comm/comm_group.h"
#include "tests/support/weight_task.h"
#include "train/setup/strategy_choice.h"

using namespace sonata;
using Catch::Contains;
using sonata::testing::shared_comm_group;
using sonata::testing::WeightTask;

namespace {

// y = w . x (WeightTask's layer and loss) with w = (1, 1) and every item's
// x = (rank + 1, rank + 1).
class RankTask : public WeightTask {
 public:
  explicit RankTask(int rank) : WeightTask(2, "rank"), rank_(rank) {}
  int64_t train_items() const override { return 8; }
  std::vector<int64_t> train_lengths() const override { return std::vector<int64_t>(8, 1); }
  HostBatch prepare(const std::vector<int64_t>& items, int64_t) const override {
    return {{{"input", full({2}, double(rank_ + 1)), true}}, int64_t(items.size()), 0.0};
  }

 private:
  int rank_;
};

}  // namespace

TEST_CASE("training strategy: the world picks one process or data parallel", "[strategy]") {
  const std::shared_ptr<ProcessGroup> group = shared_comm_group();
  const int rank = group->rank(), world = group->world_size();
  RankTask task(rank);
  TrainerOptions options;
  std::unique_ptr<TrainingStrategy> strategy =
      make_training_strategy(options, task, group, Device::cpu());
  CHECK(strategy->kind() ==
        (world == 1 ? StrategyKind::single_process : StrategyKind::data_parallel));
  CHECK(strategy->replica() == (world == 1 ? 0 : rank));
  CHECK(strategy->replicas() == world);
  CHECK(strategy->sum_over_ranks({1.0, double(rank)}) ==
        std::vector<double>{double(world), double(world * (world - 1) / 2)});
  if (world > 1)
    CHECK_THAT(strategy->describe(4), Contains(str("data parallel over ", world, " processes")) &&
                                          Contains("batch 4 per process"));
  strategy->start();

  // Two micro-batches stepped as the loop steps them (train_loop.cpp): each rank's gradient
  // is x = rank + 1, the step's the ranks' mean once the gradients are reduced.
  std::vector<HostBatch> batches{task.prepare({0, 1}, 0), task.prepare({2}, 0)};
  for (size_t m = 0; m < batches.size(); ++m) {
    strategy->before_micro_batch(m, batches.size());
    (batch_loss(task, batches[m], Device::cpu()) * 0.5).backward();
    strategy->after_micro_batch();
  }
  strategy->reduce_gradients();
  const std::vector<float> grad = task.model().parameters()[0].grad().to_vector<float>();
  for (const float g : grad) CHECK(g == Approx(double(world + 1) / 2.0));

  options.pipeline_stages = 2;
  if (world % 2 != 0)
    CHECK_THROWS_WITH(make_training_strategy(options, task, group, Device::cpu()),
                      Contains("--pipeline-stages 2 needs a multiple of 2 processes"));
}
