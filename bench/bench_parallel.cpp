// Parallel strategies for one model, side by side: one process, data parallel, naive model
// parallel (stages, one micro-batch), pipelines (GPipe and 1F1B over M micro-batches) and,
// when the world allows, hybrid data x pipeline (2 stages per replica). Every strategy trains
// the same global batch per step (SGD or --optimizer adamw), so items/s compare directly.
// Run under mpirun:
//   mpirun -np 2 build/bench_parallel [--device cuda] [--width 1] [--micro-batches 8]
// Rank 0 prints one JSON line per strategy (--json: only those), then a markdown table
// (--table: only that):
//   {"work": "parallel", "model": "vgg19_bn", "strategy": "pipeline", "schedule": "1f1b",
//    "world": 2, "devices": 2, "stages": 2, "replicas": 1, "micro_batches": 4, "batch": 32,
//    "step_ms": ..., "epoch_s": ..., "items_per_s": ..., "peak_mem_mib": ...,
//    "setup_peak_mib": ..., "state_mib": ..., "bubble_measured": ..., "bubble_ideal": ...}
// step time: the slowest rank's mean over --steps timed steps after --warmup; epoch: step
// time x ceil(--epoch-items / batch); peak memory: the largest of the ranks' allocator peaks
// during the timed steps; setup peak: the largest of the ranks' allocator peaks above what
// each held before, while building the model and the strategy (a pipeline stage builds the
// model deferred and makes only its own tensors); state: the largest of the ranks' parameter,
// gradient and optimizer state bytes after the timed steps (a pipeline stage keeps only its own
// layers' weights: the other stages' are released once it is built); measured bubble: the ranks'
// mean share of the step spent blocked on receives and sends (pipelines: idling for a neighbour,
// stage imbalance included), against the ideal (S - 1) / (M + S - 1). Stages are balanced by
// parameter bytes, as the trainer's --pipeline-balance defaults to (a layer larger than a stage's
// share cut into row pieces), or by each layer's forward and backward time measured once on rank 0
// (--balance time: VGG's compute lies in its convolutions and its weights in its
// classifier, so contiguous stages balance one or the other). Global batch and
// micro-batches are fixed per step.
// --epochs N first trains each strategy from the same initial weights for N epochs over a
// synthetic classification set of --epoch-items spectrogram-like images
// (bench/synthetic_spectrograms.h; shuffled per epoch, the last partial batch
// dropped), then gathers the weights it ends with on rank 0 and measures their accuracy
// there on --eval-items held-out images of another seed: the lines gain "epochs",
// "train_s" (the slowest rank's wall time of the N epochs) and "final_accuracy", the table
// two columns. The timed steps follow the training. SGD: --lr 0.01, no momentum; with
// --epochs, 0.02 and momentum 0.9 unless given. AdamW: --lr 1e-3, weight decay 0.01.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench/synthetic_spectrograms.h"
#include "comm/bootstrap.h"
#include "comm/pipeline/stage_state.h"
#include "comm/reducer.h"
#include "engine/allocator.h"
#include "engine/autograd/grad_mode.h"
#include "engine/deferred_init.h"
#include "engine/device.h"
#include "engine/nn/release.h"
#include "engine/nn/state_dict.h"
#include "engine/ops/loss.h"
#include "engine/optim/adamw.h"
#include "engine/optim/sgd.h"
#include "engine/random.h"
#include "kernels/cpu/capability.h"
#include "models/vgg.h"
#include "train/pipeline/build_pipeline.h"

using namespace sonata;

namespace {

struct Options {
  Device device = Device::cpu();
  double width = 0.125;
  int64_t image = 64, in_channels = 1, classes = 16, batch = 32;
  int micro_batches = 4, steps = 5, warmup = 2;
  int64_t epoch_items = 1600;
  Choice<PipelineBalance> balance = PipelineBalance::bytes;  // the trainer's --pipeline-balance
  int epochs = 0;                                            // 0: timed steps only
  int64_t eval_items = 512;
  std::optional<double> lr, momentum;  // SGD's; defaults below
  std::string optimizer = "sgd";       // sgd | adamw
  bool json_only = false, table_only = false;
};

// Plain SGD at 0.01 for the timed steps alone; with --epochs, 0.02 and momentum 0.9, which
// take the synthetic set well above chance in a few epochs.
SgdOptions sgd_options(const Options& o) {
  SgdOptions options;
  options.lr = o.lr.value_or(o.epochs > 0 ? 0.02 : 0.01);
  options.momentum = o.momentum.value_or(o.epochs > 0 ? 0.9 : 0.0);
  return options;
}

// The optimizer every strategy steps its (stage's) parameters with.
std::unique_ptr<Optimizer> make_optimizer(const Options& o, std::vector<Tensor> params) {
  if (o.optimizer == "adamw")
    return std::make_unique<AdamW>(std::move(params),
                                   AdamOptions{.lr = o.lr.value_or(1e-3), .weight_decay = 0.01});
  return std::make_unique<SGD>(std::move(params), sgd_options(o));
}

// This rank's training state: the parameters it trains (a pipeline stage's, row pieces of a
// cut layer included), their gradients and the optimizer's buffers; and whatever else of
// the model still holds storage (nothing, once a stage released the others).
int64_t state_bytes(const Module& model, const std::vector<Tensor>& trained,
                    const Optimizer& optimizer) {
  int64_t bytes = named_tensor_bytes(optimizer.state_dict().tensors);
  std::vector<Tensor> counted = trained;
  for (const auto& [name, param] : model.named_parameters())
    if (std::none_of(trained.begin(), trained.end(),
                     [&](const Tensor& t) { return t.same(param); }))
      counted.push_back(param);
  for (const Tensor& param : counted) bytes += tensor_bytes(param) + tensor_bytes(param.grad());
  return bytes;
}

struct Row {
  std::string strategy, schedule = "-";
  int devices = 1, stages = 1, replicas = 1, micro_batches = 1;
  double step_s = 0, peak_mb = 0, state_mb = 0, bubble = -1, ideal = -1;
  double setup_peak_mb = 0;
  double train_s = -1, accuracy = -1;  // --epochs only
};

// The synthetic sets of --epochs: training and held out, from different seeds.
struct TrainingSets {
  bench::SyntheticImages train, held_out;
};
constexpr uint64_t kTrainSeed = 1, kHeldOutSeed = 2, kShuffleSeed = 1000;

// A strategy's training step on this rank's rows of a global batch (the first stage reads
// x, the last the labels); returns the seconds it spent waiting for other ranks.
using Step = std::function<double(const Tensor& x, const Tensor& labels)>;

// This rank's rows of each global batch.
struct Share {
  int64_t first = 0, count = 0;
};

void reset_peak(Device device) {
  if (device.is_cuda())
    cuda_reset_peak_memory_stats(device.index);
  else
    cpu_reset_peak_memory_stats();
}

MemoryStats memory_stats(Device device) {
  return device.is_cuda() ? cuda_memory_stats(device.index) : cpu_memory_stats();
}

double peak_mb(Device device) {
  return double(memory_stats(device).peak_allocated_bytes) / double(1 << 20);
}

// The most a rank allocates while building the model and its strategy, above what it held
// before: one process's weights, or under a pipeline its stage's alone (deferred building).
class SetupPeak {
 public:
  explicit SetupPeak(Device device) : device_(device) {
    reset_peak(device);
    base_ = memory_stats(device).allocated_bytes;
  }
  double mib() const {
    return double(memory_stats(device_).peak_allocated_bytes - base_) / double(1 << 20);
  }

 private:
  Device device_;
  int64_t base_ = 0;
};

// `deferred`: built as a pipeline stage builds it (engine/deferred_init.h), memory for none
// of it until a stage materialises its own tensors.
std::shared_ptr<Vgg> make_model(const Options& o, bool deferred = false) {
  DeferredInitScope scope(deferred);
  manual_seed(7);
  VggOptions options;
  options.num_classes = o.classes;
  options.in_channels = o.in_channels;
  options.width = o.width;
  options.dropout = 0;
  auto model = std::make_shared<Vgg>(options);
  model->to(o.device);
  return model;
}

using Batch = bench::ImageBatch;

Batch make_batch(const Options& o, int64_t rows) {
  manual_seed(8);
  const TensorOptions where = TensorOptions{}.with(o.device);
  std::vector<int64_t> labels;
  for (int64_t n = 0; n < rows; ++n) labels.push_back(n % o.classes);
  return {randn({rows, o.in_channels, o.image, o.image}, where),
          from_vector(labels, {rows}).to(o.device)};
}

// Max over ranks (or mean) of one number.
double reduce_value(ProcessGroup& group, double value, bool maximum) {
  if (group.world_size() == 1) return value;
  if (maximum) {
    Tensor all = empty({group.world_size()}, TensorOptions{}.with(DType::f64).with(group.device()));
    Tensor mine = full({1}, value, TensorOptions{}.with(DType::f64).with(group.device()));
    group.all_gather(mine, all)->synchronize();
    const std::vector<double> values = all.to_vector<double>();
    return *std::max_element(values.begin(), values.end());
  }
  Tensor mine = full({1}, value, TensorOptions{}.with(DType::f64).with(group.device()));
  group.all_reduce(mine, ReduceOp::avg)->synchronize();
  return mine.item();
}

// Runs `step` --warmup then --steps times on every rank (`active` ranks only do work) and
// fills the row's step time and memory; `step` returns the share of it spent waiting.
void measure(const Options& o, ProcessGroup& world, bool active, Row& row,
             const std::function<double()>& step, const std::function<int64_t()>& state) {
  for (int i = 0; i < o.warmup && active; ++i) step();
  device_synchronize(o.device);  // timing only, outside the steps
  world.barrier()->synchronize();
  reset_peak(o.device);
  double waited = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.steps && active; ++i) waited += step();
  device_synchronize(o.device);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / o.steps;
  row.step_s = reduce_value(world, active ? seconds : 0.0, true);
  row.peak_mb = reduce_value(world, active ? peak_mb(o.device) : 0.0, true);
  row.state_mb = reduce_value(world, active ? double(state()) / double(1 << 20) : 0.0, true);
  if (row.bubble >= 0) row.bubble = reduce_value(world, waited / o.steps / seconds, false);
}

// The share of the held-out set that a model with the whole model's `state` classifies
// correctly (one process, eval mode: BatchNorm's running statistics).
double held_out_accuracy(const Options& o, const NamedTensors& state,
                         const bench::SyntheticImages& set) {
  auto model = make_model(o);
  load_state_dict(*model, state);
  model->eval();
  NoGradGuard no_grad;
  std::vector<int64_t> order(static_cast<size_t>(set.items));
  for (int64_t i = 0; i < set.items; ++i) order[size_t(i)] = i;
  int64_t correct = 0;
  constexpr int64_t kChunk = 64;
  for (int64_t first = 0; first < set.items; first += kChunk) {
    const int64_t count = std::min(kChunk, set.items - first);
    const Batch batch = bench::gather_images(set, order, first, count, o.device);
    const std::vector<float> logits =
        model->forward(batch.x).to(Device::cpu()).contiguous().to_vector<float>();
    for (int64_t n = 0; n < count; ++n) {
      const auto row = logits.begin() + n * o.classes;
      const int64_t predicted = std::max_element(row, row + o.classes) - row;
      correct += predicted == set.labels[size_t(first + n)];
    }
  }
  return double(correct) / double(set.items);
}

// --epochs: `step` over the training set's shuffled global batches on every `active` rank
// (each reading its `share`), then the held-out accuracy of the weights `final_state`
// gathers (a collective: the whole model's state on rank 0, empty elsewhere).
void train_and_evaluate(const Options& o, ProcessGroup& world, const TrainingSets* sets,
                        bool active, Share share, const Step& step,
                        const std::function<NamedTensors()>& final_state, Row& row) {
  if (o.epochs == 0) return;
  const int64_t steps = sets->train.items / o.batch;
  world.barrier()->synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < o.epochs && active; ++epoch) {
    const std::vector<int64_t> order =
        bench::shuffled_order(sets->train.items, kShuffleSeed + uint64_t(epoch));
    for (int64_t s = 0; s < steps; ++s) {
      const Batch batch = bench::gather_images(sets->train, order, s * o.batch + share.first,
                                               share.count, o.device);
      step(batch.x, batch.labels);
    }
  }
  device_synchronize(o.device);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.train_s = reduce_value(world, active ? seconds : 0.0, true);
  const NamedTensors state = final_state();
  if (world.rank() == 0) row.accuracy = held_out_accuracy(o, state, sets->held_out);
}

// The whole model's state on rank 0 for strategies where rank 0 holds all of it.
NamedTensors rank0_state(const ProcessGroup& world, const Module& model) {
  return world.rank() == 0 ? model.state_dict() : NamedTensors{};
}

Row run_single(const Options& o, ProcessGroup& world, const TrainingSets* sets) {
  Row row{"single"};
  const bool active = world.rank() == 0;
  const SetupPeak setup(o.device);
  auto model = make_model(o);
  const auto optimizer = make_optimizer(o, model->parameters());
  row.setup_peak_mb = reduce_value(world, active ? setup.mib() : 0.0, true);
  const Batch batch = make_batch(o, o.batch);
  const Step step = [&](const Tensor& x, const Tensor& labels) {
    optimizer->zero_grad();
    cross_entropy(model->forward(x), labels).backward();
    optimizer->step();
    return 0.0;
  };
  train_and_evaluate(
      o, world, sets, active, {0, o.batch}, step, [&] { return rank0_state(world, *model); }, row);
  measure(
      o, world, active, row, [&] { return step(batch.x, batch.labels); },
      [&] { return state_bytes(*model, model->parameters(), *optimizer); });
  return row;
}

Row run_data_parallel(const Options& o, const std::shared_ptr<ProcessGroup>& world,
                      const TrainingSets* sets) {
  Row row{"data parallel"};
  row.devices = row.replicas = world->world_size();
  const SetupPeak setup(o.device);
  auto model = make_model(o);
  const auto optimizer = make_optimizer(o, model->parameters());
  Reducer reducer(model->named_parameters(), world);
  row.setup_peak_mb = reduce_value(*world, setup.mib(), true);
  const int64_t rows = o.batch / world->world_size();
  const Batch batch = make_batch(o, rows);
  const Step step = [&](const Tensor& x, const Tensor& labels) {
    reducer.prepare_for_backward();
    cross_entropy(model->forward(x), labels).backward();
    reducer.finish();
    optimizer->step();
    return 0.0;
  };
  train_and_evaluate(
      o, *world, sets, true, {world->rank() * rows, rows}, step,
      [&] { return rank0_state(*world, *model); }, row);
  measure(
      o, *world, true, row, [&] { return step(batch.x, batch.labels); },
      [&] { return state_bytes(*model, model->parameters(), *optimizer); });
  return row;
}

// `stages` ranks per replica; `replicas` > 1 adds a reducer over each stage's replicas.
Row run_pipeline(const Options& o, const std::shared_ptr<ProcessGroup>& world,
                 const TrainingSets* sets, const std::string& strategy, PipelineSchedule schedule,
                 int micro_batches, int replicas) {
  Row row{strategy, schedule_name(schedule)};
  const int stages = world->world_size() / replicas;
  row.devices = world->world_size();
  row.stages = stages;
  row.replicas = replicas;
  row.micro_batches = micro_batches;
  row.bubble = 0;
  row.ideal = ideal_bubble(stages, micro_batches);
  // As the trainer builds it (train/pipeline/build_pipeline.h): no rank makes another
  // stage's tensors (--balance time makes one layer at a time to time it on rank 0,
  // comm/pipeline/partition.h), and a layer larger than a stage's share goes in row pieces.
  const SetupPeak setup(o.device);
  auto model = make_model(o, true);
  const Batch batch = make_batch(o, o.batch / replicas);
  PipelineBuildOptions build;
  build.stages = stages;
  build.balance = o.balance.value();
  build.timing_input = [&]() -> LayerValue {
    return {batch.x.slice(0, 0, std::max<int64_t>(1, batch.x.size(0) / micro_batches)), {}};
  };
  build.pipeline = PipelineOptions{schedule, micro_batches};
  BuiltPipeline built =
      build_pipeline(world, model->pipeline_layers(), build,
                     [](const LayerValue& out, const std::vector<Tensor>& targets) {
                       return cross_entropy(out.x, targets[0]);
                     });
  if (world->rank() == 0)
    std::fprintf(stderr, "bench_parallel: %s stages %s\n", strategy.c_str(),
                 built.plan_text.c_str());
  const PipelineStage& stage = *built.stage;
  Reducer* reducer = built.reducer.get();
  const auto optimizer = make_optimizer(o, stage.parameters());
  row.setup_peak_mb = reduce_value(*world, setup.mib(), true);
  const Step step = [&](const Tensor& x, const Tensor& labels) {
    if (!reducer) optimizer->zero_grad();
    const PipelineStepResult result = built.pipeline->step({x, Tensor()}, {labels}, reducer);
    optimizer->step();
    return result.wait_seconds;
  };
  // Replica 0's stages gather on world rank 0 (its stage 0); the other replicas' gathers
  // are discarded.
  const int64_t rows = o.batch / replicas;
  train_and_evaluate(
      o, *world, sets, true, {built.replica * rows, rows}, step,
      [&] { return merge_row_pieces(gather_state_dict(*built.stage_group, stage.state_dict())); },
      row);
  measure(
      o, *world, true, row, [&] { return step(batch.x, batch.labels); },
      [&] { return state_bytes(*model, stage.parameters(), *optimizer); });
  return row;
}

std::string fixed(double value, int digits) {
  if (value < 0) return "-";
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

void print_json(const Options& o, const Row& r, const std::string& backend, int world) {
  const double epoch_s = r.step_s * std::ceil(double(o.epoch_items) / double(o.batch));
  std::printf(
      "{\"work\": \"parallel\", \"model\": \"vgg19_bn\", \"width\": %g, \"backend\": \"%s\", "
      "\"optimizer\": \"%s\", \"strategy\": \"%s\", \"schedule\": \"%s\", \"world\": %d, "
      "\"devices\": %d, \"stages\": %d, \"replicas\": %d, \"micro_batches\": %d, "
      "\"batch\": %lld, \"step_ms\": %.3f, \"epoch_s\": %.3f, \"items_per_s\": %.2f, "
      "\"peak_mem_mib\": %.2f, \"setup_peak_mib\": %.2f, \"state_mib\": %.3f, "
      "\"bubble_measured\": %s, \"bubble_ideal\": %s",
      o.width, backend.c_str(), o.optimizer.c_str(), r.strategy.c_str(), r.schedule.c_str(), world,
      r.devices, r.stages, r.replicas, r.micro_batches, static_cast<long long>(o.batch),
      r.step_s * 1e3, epoch_s, double(o.batch) / r.step_s, r.peak_mb, r.setup_peak_mb, r.state_mb,
      r.bubble < 0 ? "null" : fixed(r.bubble, 4).c_str(),
      r.ideal < 0 ? "null" : fixed(r.ideal, 4).c_str());
  if (o.epochs > 0)
    std::printf(", \"epochs\": %d, \"train_s\": %.3f, \"final_accuracy\": %.4f", o.epochs,
                r.train_s, r.accuracy);
  std::printf(", \"cpu_capability\": \"%s\"}\n", kernels::cpu::capability_name());
  std::fflush(stdout);
}

void print_table(const Options& o, const std::vector<Row>& rows) {
  const bool trained = o.epochs > 0;
  std::printf(
      "\n| strategy | schedule | devices | stages x replicas | M | step (ms) | epoch (s) | "
      "items/s | peak mem / device (MiB) | setup peak / device (MiB) | state / device (MiB) | "
      "bubble measured | bubble ideal |%s\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|%s\n",
      trained ? " train (s) | final accuracy |" : "", trained ? "---|---|" : "");
  for (const Row& r : rows) {
    const double epoch_s = r.step_s * std::ceil(double(o.epoch_items) / double(o.batch));
    std::printf(
        "| %s | %s | %d | %d x %d | %d | %.1f | %.2f | %.1f | %.1f | %.1f | %.2f | %s | %s |",
        r.strategy.c_str(), r.schedule.c_str(), r.devices, r.stages, r.replicas, r.micro_batches,
        r.step_s * 1e3, epoch_s, double(o.batch) / r.step_s, r.peak_mb, r.setup_peak_mb, r.state_mb,
        fixed(r.bubble, 3).c_str(), fixed(r.ideal, 3).c_str());
    if (trained) std::printf(" %.1f | %.3f |", r.train_s, r.accuracy);
    std::printf("\n");
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string device_name = "cpu";
  CLI::App app{"sonata parallel strategies for vgg19_bn (single, data, model, pipeline, hybrid)"};
  app.add_option("--device", device_name, "cpu (MPI) | cuda (NCCL)")->capture_default_str();
  app.add_option("--width", o.width, "vgg19_bn width multiplier (1 = full)")->capture_default_str();
  app.add_option("--image", o.image, "image height and width")->capture_default_str();
  app.add_option("--in-channels", o.in_channels, "input channels")->capture_default_str();
  app.add_option("--num-classes", o.classes, "classes")->capture_default_str();
  app.add_option("--batch", o.batch, "global batch per step (all replicas)")->capture_default_str();
  app.add_option("--micro-batches", o.micro_batches, "micro-batches per pipeline step")
      ->capture_default_str();
  app.add_option("--steps", o.steps, "timed steps per strategy")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed steps first")->capture_default_str();
  app.add_option("--epoch-items", o.epoch_items,
                 "items per epoch: the epoch time, and with --epochs the training set")
      ->capture_default_str();
  app.add_option("--balance", o.balance, "stage balance: bytes (parameter bytes) | time (measured)")
      ->capture_default_str();
  app.add_option("--epochs", o.epochs,
                 "train each strategy for N epochs of --epoch-items synthetic images first and "
                 "report its held-out accuracy (0: timed steps only)")
      ->capture_default_str();
  app.add_option("--eval-items", o.eval_items, "held-out images for --epochs' accuracy")
      ->capture_default_str();
  app.add_option("--lr", o.lr, "SGD learning rate [0.01; with --epochs 0.02]");
  app.add_option("--momentum", o.momentum, "SGD momentum [0; with --epochs 0.9]");
  app.add_option("--optimizer", o.optimizer, "sgd | adamw (lr 1e-3, weight decay 0.01)")
      ->capture_default_str();
  app.add_flag("--json", o.json_only, "print only the JSON lines");
  app.add_flag("--table", o.table_only, "print only the markdown table");
  CLI11_PARSE(app, argc, argv);
  try {
    o.device = Device::parse(device_name);
    SONATA_CHECK(o.balance.known(), "bench_parallel: --balance '", o.balance, "' must be ",
                 o.balance.words());
    SONATA_CHECK(o.optimizer == "sgd" || o.optimizer == "adamw", "bench_parallel: --optimizer '",
                 o.optimizer, "' must be sgd or adamw");
    SONATA_CHECK(!(o.json_only && o.table_only), "bench_parallel: --json and --table exclude ",
                 "each other (without either it prints both)");
    SONATA_CHECK(o.steps > 0 && o.warmup >= 0 && o.micro_batches > 0 && o.epochs >= 0,
                 "bench_parallel: --steps and --micro-batches must be positive, --warmup and "
                 "--epochs not negative");
    auto world = init_process_group(o.device);
    const int W = world->world_size();
    SONATA_CHECK(o.batch % (W * o.micro_batches) == 0, "bench_parallel: --batch ", o.batch,
                 " must divide into ", W, " ranks x ", o.micro_batches, " micro-batches");
    std::unique_ptr<TrainingSets> sets;
    if (o.epochs > 0) {
      SONATA_CHECK(o.epoch_items >= o.batch && o.eval_items > 0, "bench_parallel: --epochs ",
                   o.epochs, " needs --epoch-items (", o.epoch_items, ") of at least --batch (",
                   o.batch, ") and a positive --eval-items (", o.eval_items, ")");
      sets = std::make_unique<TrainingSets>(
          TrainingSets{bench::synthetic_spectrograms(o.epoch_items, o.classes, o.in_channels,
                                                     o.image, kTrainSeed),
                       bench::synthetic_spectrograms(o.eval_items, o.classes, o.in_channels,
                                                     o.image, kHeldOutSeed)});
    }
    const TrainingSets* data = sets.get();
    std::vector<Row> rows;
    rows.push_back(run_single(o, *world, data));
    if (W > 1) {
      rows.push_back(run_data_parallel(o, world, data));
      rows.push_back(run_pipeline(o, world, data, "model parallel", PipelineSchedule::gpipe, 1, 1));
      rows.push_back(
          run_pipeline(o, world, data, "pipeline", PipelineSchedule::gpipe, o.micro_batches, 1));
      rows.push_back(run_pipeline(o, world, data, "pipeline", PipelineSchedule::one_f_one_b,
                                  o.micro_batches, 1));
      if (W >= 4 && W % 2 == 0)
        rows.push_back(run_pipeline(o, world, data, "hybrid", PipelineSchedule::one_f_one_b,
                                    o.micro_batches, W / 2));
    }
    if (world->rank() == 0) {
      if (!o.table_only)
        for (const Row& row : rows) print_json(o, row, world->backend(), W);
      if (!o.json_only) print_table(o, rows);
    }
    world.reset();
    finalize();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_parallel: %s\n", error.what());
    return 1;
  }
  return 0;
}
