// The pipeline's pure parts: schedules written out by hand, partitions worked out by hand,
// micro-batch sizes, message tags. They need no peers; every world size runs them alike.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "comm/pipeline/micro_batch.h"
#include "comm/pipeline/partition.h"
#include "comm/pipeline/schedule.h"
#include "comm/pipeline/transfer.h"
#include "engine/ops.h"

using namespace sonata;

namespace {

std::string actions_str(const std::vector<PipeAction>& actions) {
  std::string out;
  for (const PipeAction& a : actions) {
    if (!out.empty()) out += " ";
    out.push_back(a.kind == PipeAction::Kind::forward ? 'F' : 'B');
    out += std::to_string(a.micro_batch);
  }
  return out;
}

std::string ranges_str(const std::vector<LayerRange>& ranges) {
  return partition_str(ranges);
}

}  // namespace

TEST_CASE("gpipe runs every forward, then every backward", "[comm][pipeline][schedule]") {
  for (int stage = 0; stage < 3; ++stage)
    CHECK(actions_str(schedule_actions(PipelineSchedule::gpipe, stage, 3, 3)) ==
          "F0 F1 F2 B0 B1 B2");
}

TEST_CASE("1f1b warms up S - s - 1 forwards, alternates, then drains",
          "[comm][pipeline][schedule]") {
  const auto f = PipelineSchedule::one_f_one_b;
  // 3 stages, 4 micro-batches (Megatron's non-interleaved schedule).
  CHECK(actions_str(schedule_actions(f, 0, 3, 4)) == "F0 F1 F2 B0 F3 B1 B2 B3");
  CHECK(actions_str(schedule_actions(f, 1, 3, 4)) == "F0 F1 B0 F2 B1 F3 B2 B3");
  CHECK(actions_str(schedule_actions(f, 2, 3, 4)) == "F0 B0 F1 B1 F2 B2 F3 B3");
  // Fewer micro-batches than the warm-up: all forwards first.
  CHECK(actions_str(schedule_actions(f, 0, 4, 2)) == "F0 F1 B0 B1");
  CHECK(actions_str(schedule_actions(f, 0, 1, 2)) == "F0 B0 F1 B1");
  CHECK_THROWS_WITH(schedule_actions(f, 3, 3, 4), Catch::Contains("stage 3 does not exist"));
  CHECK_THROWS_WITH(schedule_actions(f, 0, 3, 0), Catch::Contains("--micro-batches 0"));
}

TEST_CASE("schedule names and the ideal bubble", "[comm][pipeline][schedule]") {
  CHECK(parse_schedule("gpipe") == PipelineSchedule::gpipe);
  CHECK(parse_schedule("1f1b") == PipelineSchedule::one_f_one_b);
  CHECK_THROWS_WITH(parse_schedule("zb"), Catch::Contains("unknown schedule 'zb'"));
  CHECK(ideal_bubble(4, 8) == Approx(3.0 / 11.0));
  CHECK(ideal_bubble(1, 8) == 0.0);
}

TEST_CASE("partitions at cut points and balanced by cost", "[comm][pipeline][partition]") {
  CHECK(ranges_str(partition_at(5, {2, 4})) == "0-1 | 2-3 | 4-4");
  CHECK(ranges_str(partition_at(5, {})) == "0-4");
  CHECK_THROWS_WITH(partition_at(5, {3, 3}), Catch::Contains("cut point 3"));
  CHECK_THROWS_WITH(partition_at(5, {5}), Catch::Contains("cut point 5"));
  // Costs 1 2 3 4 5 6 in 3 stages: 6 must end the last stage, alone (5 + 6 = 11); then
  // 1 2 3 | 4 5 gives a largest stage of 9, the best (1 2 3 4 | 5 gives 10).
  CHECK(ranges_str(partition_balanced({1, 2, 3, 4, 5, 6}, 3)) == "0-2 | 3-4 | 5-5");
  // A heavy layer in the middle gets a stage of its own.
  CHECK(ranges_str(partition_balanced({1, 1, 10, 1, 1}, 3)) == "0-1 | 2-2 | 3-4");
  // Ties: equal costs split evenly, the first stages taking the remainder.
  CHECK(ranges_str(partition_balanced({1, 1, 1, 1, 1}, 2)) == "0-2 | 3-4");
  CHECK(ranges_str(partition_balanced({5, 0, 0}, 3)) == "0-0 | 1-1 | 2-2");
  CHECK_THROWS_WITH(partition_balanced({1, 2}, 3), Catch::Contains("3 stages"));
}

TEST_CASE("a layer heavier than a stage's share is cut into row pieces, only where it helps",
          "[comm][pipeline][partition]") {
  auto identity = [](const LayerValue& in) { return in; };
  LayerSequence layers = {module_layer("a", {}, identity), module_layer("b", {}, identity),
                          module_layer("fc", {}, identity)};
  layers[2].rows = 16;
  layers[2].piece = [&](int64_t, int64_t) { return module_layer("", {}, identity); };
  // Costs 1 1 6 in 2 stages: whole layers give a | b | fc at best, 6 on the last stage. As 16
  // chunks of 0.375 the best is a, b and 5 rows (3.875) | 11 rows (4.125).
  const StagePlan cut = partition_with_row_pieces(layers, {1, 1, 6}, 2);
  CHECK(stage_plan_str(cut) == "0-2 | 3-3; fc rows 0-4 | 5-15");
  CHECK(cut.cut_layers == std::vector<std::string>{"fc"});
  REQUIRE(cut.layers.size() == 4);
  CHECK(cut.layers[2].name == "fc[0:5]");
  CHECK(cut.layers[3].shard == RowShard{5, 16, 16});
  // Costs 4 4: whole layers already balance; no cut.
  const StagePlan whole = partition_with_row_pieces({layers[1], layers[2]}, {4, 4}, 2);
  CHECK(stage_plan_str(whole) == "0-0 | 1-1");
  CHECK(whole.cut_layers.empty());
  // One stage: nothing to cut.
  CHECK(partition_with_row_pieces(layers, {1, 1, 6}, 1).layers.size() == 3);
}

TEST_CASE("micro-batches split dim 0 as tensor_split does", "[comm][pipeline]") {
  CHECK(micro_batch_sizes(6, 3) == std::vector<int64_t>{2, 2, 2});
  CHECK(micro_batch_sizes(7, 3) == std::vector<int64_t>{3, 2, 2});
  CHECK_THROWS_WITH(micro_batch_sizes(2, 3), Catch::Contains("a batch of 2"));
  const Tensor x = arange(0, 14).view({7, 2});
  const Tensor lengths = from_vector(std::vector<int64_t>{7, 6, 5, 4, 3, 2, 1}, {7});
  const std::vector<LayerValue> parts = split_micro_batches({x, lengths}, 3);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].x.to_vector<double>() == std::vector<double>{0, 1, 2, 3, 4, 5});
  CHECK(parts[2].x.to_vector<double>() == std::vector<double>{10, 11, 12, 13});
  CHECK(parts[1].lengths.to_vector<int64_t>() == std::vector<int64_t>{4, 3});
  const auto targets = split_targets({lengths, x}, 7, 3);
  CHECK(targets[2][0].to_vector<int64_t>() == std::vector<int64_t>{2, 1});
  CHECK(targets[2][1].shape() == Shape{2, 2});
  CHECK_THROWS_WITH(split_targets({lengths}, 6, 3), Catch::Contains("must have the batch's 6"));
}

TEST_CASE("every micro-batch's message tags stay apart from the state exchanges'",
          "[comm][pipeline]") {
  CHECK(pipe_tag(0, PipeMessage::header) == 0);
  CHECK(pipe_tag(2, PipeMessage::gradient) == 2 * kPipeMessageKinds + 3);
  // The last micro-batch's last kind is below the first state tag; one more is refused.
  CHECK(pipe_tag(kMaxMicroBatches, PipeMessage::loss) < kFirstStateTag);
  CHECK_THROWS_WITH(pipe_tag(kMaxMicroBatches + 1, PipeMessage::header),
                    Catch::Contains("micro-batch " + std::to_string(kMaxMicroBatches + 1)));
  CHECK(tag_of(StateTag::checkpoint_tensor) > tag_of(StateTag::tensor));
}
