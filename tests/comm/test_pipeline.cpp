// Pipeline and hybrid (data x pipeline) parallelism against one process in float64: after K
// SGD steps every stage's weights (and BatchNorm statistics) equal those of ONE process that
// trains the whole model on the same batches, running the same micro-batches one after
// another with their gradients accumulated (loss / M each). The reference is computed on
// every rank with the model's plain forward(), never with the pipeline code.
//
// Pipelines use S = world size stages (np2, np3); hybrid 2 x 2 runs under np4. World 1 runs
// the stage-group of one (S = 1), the trivial pipeline.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "comm/pipeline/micro_batch.h"
#include "comm/pipeline/partition.h"
#include "comm/pipeline/pipeline.h"
#include "comm/pipeline/stage_state.h"
#include "comm/reducer.h"
#include "comm/single_group.h"
#include "engine/io/safetensors.h"
#include "engine/nn/state_dict.h"
#include "engine/ops.h"
#include "engine/ops/ctc.h"
#include "engine/ops/loss.h"
#include "engine/optim/sgd.h"
#include "engine/random.h"
#include "models/ds2.h"
#include "models/vgg.h"
#include "tests/comm/comm_group.h"
#include "tests/comm/recording_group.h"

using namespace sonata;
using sonata::testing::comm_group;

namespace {

constexpr int kSteps = 2;
constexpr double kTolerance = 1e-12;

const SgdOptions kSgd{0.05, 0.9, 0, 0, false};

// One model family under test: how to build it, its batches and its loss.
struct Family {
  std::string name;
  std::function<std::shared_ptr<Module>()> make;  // seeded: every call gives the same weights
  std::function<LayerSequence(Module&)> layers;
  std::function<std::vector<size_t>(int stages)> cuts;
  // Step k's whole batch of `rows` samples: input (and lengths), targets.
  std::function<std::pair<LayerValue, std::vector<Tensor>>(int step, int64_t rows)> batch;
  PipelineLoss loss;
  // The single-process forward of one micro-batch, as the model's own forward() runs it.
  std::function<LayerValue(Module&, const LayerValue&)> forward;
};

Family vgg_family() {
  Family f;
  f.name = "vgg19_bn";
  f.make = [] {
    manual_seed(11);
    VggOptions options;
    options.num_classes = 4;
    options.in_channels = 1;
    options.width = 1.0 / 16;
    options.dropout = 0;
    auto model = std::make_shared<Vgg>(options);
    model->to(DType::f64);
    return std::shared_ptr<Module>(model);
  };
  f.layers = [](Module& m) { return dynamic_cast<Vgg&>(m).pipeline_layers(); };
  f.cuts = [](int stages) {
    // Balanced by parameter bytes here; tests of the partition functions are separate.
    std::vector<size_t> cuts;
    (void)stages;
    return cuts;
  };
  f.batch = [](int step, int64_t rows) {
    manual_seed(100 + uint64_t(step));
    const Tensor x = randn({rows, 1, 32, 32}, TensorOptions{}.with(DType::f64));
    std::vector<int64_t> labels;
    for (int64_t n = 0; n < rows; ++n) labels.push_back((n * 3 + step) % 4);
    return std::make_pair(LayerValue{x, Tensor()},
                          std::vector<Tensor>{from_vector(labels, {rows})});
  };
  f.loss = [](const LayerValue& out, const std::vector<Tensor>& targets) {
    return cross_entropy(out.x, targets[0]);
  };
  f.forward = [](Module& m, const LayerValue& in) { return LayerValue{m.forward(in.x), Tensor()}; };
  return f;
}

Family ds2_family() {
  Family f;
  f.name = "ds2";
  f.make = [] {
    manual_seed(12);
    auto model = make_ds2(ModelConfig({{"num-mels", "16"},
                                       {"conv-channels", "4"},
                                       {"hidden", "16"},
                                       {"layers", "2"},
                                       {"num-classes", "6"}}));
    model->to(DType::f64);
    return model;
  };
  f.layers = [](Module& m) { return dynamic_cast<Ds2&>(m).pipeline_layers(); };
  // conv.0-2 | conv.3-5 | rnn | fc: cut between the conv and RNN blocks first.
  f.cuts = [](int stages) {
    if (stages == 2) return std::vector<size_t>{2};
    if (stages == 3) return std::vector<size_t>{1, 2};
    return std::vector<size_t>{};
  };
  f.batch = [](int step, int64_t rows) {
    manual_seed(200 + uint64_t(step));
    const Tensor x = randn({rows, 1, 21, 16}, TensorOptions{}.with(DType::f64));
    std::vector<int64_t> lengths, labels, label_lengths;
    for (int64_t n = 0; n < rows; ++n) {
      lengths.push_back(21 - (n * 5 + step) % 13);  // ragged, 9..21 frames
      label_lengths.push_back(1 + (n + step) % 3);
      for (int64_t k = 0; k < 3; ++k) labels.push_back(1 + (n + 2 * k + step) % 5);
    }
    return std::make_pair(
        LayerValue{x, from_vector(lengths, {rows})},
        std::vector<Tensor>{from_vector(labels, {rows, 3}), from_vector(label_lengths, {rows})});
  };
  f.loss = [](const LayerValue& out, const std::vector<Tensor>& targets) {
    return ctc_loss(out.x, targets[0], out.lengths, targets[1], {0, Reduction::mean, true});
  };
  f.forward = [](Module& m, const LayerValue& in) {
    const Ds2Output out = dynamic_cast<Ds2&>(m).forward(in.x, in.lengths);
    return LayerValue{out.output, out.output_lengths};
  };
  return f;
}

std::vector<Tensor> rows(const std::vector<Tensor>& tensors, int64_t begin, int64_t end) {
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) out.push_back(t.slice(0, begin, end));
  return out;
}

LayerValue rows(const LayerValue& value, int64_t begin, int64_t end) {
  return {value.x.slice(0, begin, end),
          value.lengths.defined() ? value.lengths.slice(0, begin, end) : Tensor()};
}

// ONE process: each step's batch of `micro * size` rows as `micro` micro-batches of `size`
// run one after another, each loss / micro, then one SGD step. Returns each step's loss sum.
std::vector<double> train_single(const Family& f, Module& model, int steps, int micro,
                                 int64_t size) {
  SGD optimizer(model.parameters(), kSgd);
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    const auto [input, targets] = f.batch(step, micro * size);
    optimizer.zero_grad();
    double total = 0;
    for (int m = 0; m < micro; ++m) {
      const int64_t begin = m * size, end = begin + size;
      const Tensor loss =
          f.loss(f.forward(model, rows(input, begin, end)), rows(targets, begin, end)) /
          double(micro);
      loss.backward();
      total += loss.item();
    }
    optimizer.step();
    losses.push_back(total);
  }
  return losses;
}

std::vector<LayerRange> stages_of(const Family& f, const LayerSequence& layers, int stages) {
  const std::vector<size_t> cuts = f.cuts(stages);
  if (stages > 1 && cuts.empty()) return partition_balanced(layer_parameter_bytes(layers), stages);
  return partition_at(layers.size(), cuts);
}

// Each of this rank's state entries equals the reference's entry of that name.
void check_state_equal(const NamedTensors& ours, const Module& reference, bool with_buffers) {
  std::map<std::string, Tensor> expected;
  for (const auto& [name, t] : reference.state_dict()) expected[name] = t;
  std::map<std::string, bool> is_parameter;
  for (const auto& [name, t] : reference.named_parameters()) is_parameter[name] = true;
  size_t compared = 0;
  for (const auto& [name, t] : ours) {
    INFO(name);
    REQUIRE(expected.count(name) == 1);
    if (!with_buffers && !is_parameter[name]) continue;
    const Tensor want = expected[name].to(DType::f64);
    const double scale = std::max(1.0, amax(abs(want)).item());
    CHECK(amax(abs(sub(t.to(DType::f64), want))).item() <= kTolerance * scale);
    ++compared;
  }
  CHECK(compared > 0);
}

std::shared_ptr<ProcessGroup> world_copy() {
  // A stage group over the whole world (its own communicator).
  return comm_group().split(0, comm_group().rank());
}

struct PipelineRun {
  std::shared_ptr<Module> model;  // owns the modules the stage's layers run
  std::shared_ptr<Pipeline> pipeline;
  std::unique_ptr<SGD> optimizer;
};

PipelineRun make_run(const Family& f, std::shared_ptr<ProcessGroup> stages,
                     PipelineSchedule schedule, int micro) {
  PipelineRun run;
  run.model = f.make();
  LayerSequence layers = f.layers(*run.model);
  const std::vector<LayerRange> ranges = stages_of(f, layers, stages->world_size());
  auto stage = std::make_shared<PipelineStage>(std::move(layers), ranges, stages->rank());
  run.pipeline =
      std::make_shared<Pipeline>(stages, stage, f.loss, PipelineOptions{schedule, micro});
  run.optimizer = std::make_unique<SGD>(stage->parameters(), kSgd);
  return run;
}

}  // namespace

TEST_CASE("a pipeline over the world equals one process with the same micro-batches",
          "[comm][pipeline]") {
  const auto stages = world_copy();
  const int S = stages->world_size();
  if (S > 4) return;  // the test models have 4 (ds2) or more layers
  constexpr int M = 3;
  constexpr int64_t b = 2;  // rows per micro-batch
  for (const Family& f : {vgg_family(), ds2_family()}) {
    auto reference = f.make();
    const std::vector<double> expected_loss = train_single(f, *reference, kSteps, M, b);
    for (const PipelineSchedule schedule :
         {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
      INFO(f.name << " " << schedule_name(schedule) << " over " << S << " stages");
      PipelineRun run = make_run(f, stages, schedule, M);
      for (int step = 0; step < kSteps; ++step) {
        const auto [input, targets] = f.batch(step, M * b);
        run.optimizer->zero_grad();
        const PipelineStepResult result = run.pipeline->step(input, targets);
        run.optimizer->step();
        if (stages->rank() == 0 || stages->rank() == S - 1) {
          CHECK(std::abs(result.loss - expected_loss[size_t(step)]) <=
                kTolerance * std::max(1.0, std::abs(expected_loss[size_t(step)])));
        } else {
          CHECK(std::isnan(result.loss));
        }
        // The last stage hands back each micro-batch's own loss (what the trainer's loop
        // tracks): their mean is the step's loss; the other stages hand back none.
        if (stages->rank() == S - 1) {
          REQUIRE(result.losses.size() == size_t(M));
          double mean = 0;
          for (const Tensor& loss : result.losses) mean += loss.to(DType::f64).item() / M;
          // Summed in another order than the step's loss: equal within rounding.
          CHECK(std::abs(mean - expected_loss[size_t(step)]) <=
                1e-6 * std::max(1.0, std::abs(expected_loss[size_t(step)])));
        } else {
          CHECK(result.losses.empty());
        }
        CHECK(result.wait_seconds <= result.step_seconds);
      }
      check_state_equal(run.pipeline->stage().state_dict(), *reference, true);
    }
  }
}

TEST_CASE("hybrid data x pipeline (2 x 2) equals one process on the replicas' whole batch",
          "[comm][pipeline][hybrid]") {
  ProcessGroup& world = comm_group();
  if (world.world_size() != 4) {
    WARN("hybrid 2 x 2 needs 4 ranks (ctest's comm/np4); skipped with " << world.world_size());
    return;
  }
  constexpr int D = 2, S = 2, M = 2;
  constexpr int64_t b = 2;  // rows per micro-batch
  const int replica = world.rank() / S, s = world.rank() % S;
  const auto stages = world.split(replica, s);    // this replica's pipeline
  const auto replicas = world.split(s, replica);  // stage s of every replica
  REQUIRE(stages->rank() == s);
  REQUIRE(replicas->rank() == replica);
  for (const Family& f : {vgg_family(), ds2_family()}) {
    // One process: the D replicas' shards one after another, D * M micro-batches in all.
    auto reference = f.make();
    const std::vector<double> expected_loss = train_single(f, *reference, kSteps, D * M, b);
    for (const PipelineSchedule schedule :
         {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
      INFO(f.name << " " << schedule_name(schedule) << " hybrid 2 x 2");
      PipelineRun run = make_run(f, stages, schedule, M);
      Reducer reducer(run.pipeline->stage().named_parameters(), replicas);
      for (int step = 0; step < kSteps; ++step) {
        const auto [input, targets] = f.batch(step, D * M * b);
        const int64_t begin = replica * M * b, end = begin + M * b;  // this replica's shard
        const PipelineStepResult result =
            run.pipeline->step(rows(input, begin, end), rows(targets, begin, end), &reducer);
        run.optimizer->step();
        if (s == 0) {  // the replicas' losses average to the whole batch's
          Tensor loss = full({1}, result.loss, TensorOptions{}.with(DType::f64));
          replicas->all_reduce(loss, ReduceOp::avg)->wait();
          CHECK(std::abs(loss.item() - expected_loss[size_t(step)]) <=
                kTolerance * std::max(1.0, std::abs(expected_loss[size_t(step)])));
        }
      }
      // Parameters only: each replica's BatchNorm statistics follow its own shard.
      check_state_equal(run.pipeline->stage().state_dict(), *reference, false);
    }
  }
}

TEST_CASE("hybrid: the reducer's all-reduces never overlap pipeline messages in flight",
          "[comm][pipeline][hybrid]") {
  // NCCL's user guide: operations on two communicators in flight at once can deadlock unless
  // every rank issues them in one order. The stage group (the world) and the replica group
  // (here a single rank) share one log: every pipeline message posted before the first
  // all-reduce has been waited for by then, and none is posted until the last one.
  const auto log = std::make_shared<std::vector<std::string>>();
  const auto stages =
      std::make_shared<sonata::testing::RecordingGroup>(world_copy(), log, "stage:");
  const int S = stages->world_size();
  if (S > 4) return;
  const auto replicas = std::make_shared<sonata::testing::RecordingGroup>(
      std::make_shared<SingleGroup>(), log, "replica:");
  constexpr int M = 3;
  constexpr int64_t b = 2;
  const Family f = ds2_family();
  for (const PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
    INFO(schedule_name(schedule) << " over " << S << " stages");
    PipelineRun run = make_run(f, stages, schedule, M);
    Reducer reducer(run.pipeline->stage().named_parameters(), replicas);
    for (int step = 0; step < 2; ++step) {
      log->clear();
      const auto [input, targets] = f.batch(step, M * b);
      run.pipeline->step(input, targets, &reducer);
      const auto is_reduce = [](const std::string& e) { return e == "replica:all_reduce"; };
      const auto first = std::find_if(log->begin(), log->end(), is_reduce);
      const auto last = std::find_if(log->rbegin(), log->rend(), is_reduce).base();
      REQUIRE(first != log->end());
      int64_t posted = 0, waited = 0;
      for (auto e = log->begin(); e != first; ++e) {
        if (*e == "stage:send" || *e == "stage:recv") ++posted;
        if (*e == "stage:synchronize") ++waited;
      }
      CHECK(posted == waited);
      for (auto e = first; e != last; ++e) CHECK(e->rfind("stage:", 0) != 0);
      run.optimizer->step();
    }
  }
}

TEST_CASE("a pipelined checkpoint loads into one process, and one process's into the stages",
          "[comm][pipeline][checkpoint]") {
  const auto stages = world_copy();
  const int S = stages->world_size();
  if (S > 4) return;
  constexpr int M = 2;
  constexpr int64_t b = 2;
  const Family f = ds2_family();
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("sonata_pipeline_" + std::to_string(::getppid()) + ".safetensors"))
                               .string();

  // Pipelined training, gathered on stage 0 and written as one file.
  PipelineRun run = make_run(f, stages, PipelineSchedule::one_f_one_b, M);
  for (int step = 0; step < kSteps; ++step) {
    const auto [input, targets] = f.batch(step, M * b);
    run.optimizer->zero_grad();
    run.pipeline->step(input, targets);
    run.optimizer->step();
  }
  const NamedTensors gathered = gather_state_dict(*stages, run.pipeline->stage().state_dict());
  auto reference = f.make();
  train_single(f, *reference, kSteps, M, b);
  if (stages->rank() == 0) {
    // The whole model's names in its order, with the single process's values.
    const NamedTensors expected = reference->state_dict();
    REQUIRE(gathered.size() == expected.size());
    for (size_t i = 0; i < gathered.size(); ++i) CHECK(gathered[i].first == expected[i].first);
    save_safetensors(file, gathered);
    // A fresh single-process model resumes from it.
    auto single = f.make();
    load_state_dict(*single, load_safetensors(file).tensors);
    check_state_equal(single->state_dict(), *reference, true);
  } else {
    CHECK(gathered.empty());
  }
  stages->barrier()->wait();

  // The reverse: a single process's state dict (the reference's, read by stage 0) handed
  // out to the stages of fresh models.
  PipelineRun fresh = make_run(f, stages, PipelineSchedule::gpipe, M);
  NamedTensors full;
  if (stages->rank() == 0) full = load_safetensors(file).tensors;
  scatter_state_dict(*stages, full, fresh.pipeline->stage().state_dict());
  check_state_equal(fresh.pipeline->stage().state_dict(), *reference, true);

  // One more step each way stays equal.
  train_single(f, *reference, 1, M, b);  // repeats step 0's batch on the trained weights
  const auto [input, targets] = f.batch(0, M * b);
  fresh.optimizer->zero_grad();
  fresh.pipeline->step(input, targets);
  fresh.optimizer->step();
  check_state_equal(fresh.pipeline->stage().named_parameters(), *reference, false);

  // A state dict missing an entry is refused on every rank.
  if (stages->rank() == 0) full.pop_back();
  if (stages->rank() == 0) {
    CHECK_THROWS_WITH(scatter_state_dict(*stages, full, fresh.pipeline->stage().state_dict()),
                      Catch::Contains("no 'fc.bias'"));
  } else {
    CHECK_THROWS_WITH(scatter_state_dict(*stages, full, fresh.pipeline->stage().state_dict()),
                      Catch::Contains("stage rank 0 refused"));
  }
  stages->barrier()->wait();
  if (stages->rank() == 0) std::filesystem::remove(file);
}
