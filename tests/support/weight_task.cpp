#include "tests/support/weight_task.h"

#include <utility>

#include "engine/ops.h"

namespace sonata::testing {
namespace {

struct Weights : Module {
  explicit Weights(int64_t size) {
    weight = register_parameter("weight", ones({size}).set_requires_grad(true));
  }
  Tensor weight;
};

// The evaluation of a task without evaluation splits: no batches, no counts.
class NoEvalPass : public EvalPass {
 public:
  int64_t batch_count() const override { return 0; }
  HostBatch batch(int64_t) const override { return {}; }
  void add(const LayerValue&, const HostBatch&) override {}
  EvalCounts finish() override { return {}; }
};

}  // namespace

WeightTask::WeightTask(int64_t size, std::string description)
    : description_(std::move(description)) {
  auto weights = std::make_shared<Weights>(size);
  weight_ = weights->weight;
  model_ = weights;
  // The layer names no module: its names would be the whole model's under a prefix, and
  // the whole model is this one parameter. Nothing reads them: a pipeline refuses one layer.
  const Tensor weight = weight_;
  layers_.push_back(module_layer("weight", {}, [weight](const LayerValue& in) {
    return LayerValue{weight * in.x, in.lengths};
  }));
}

LayerValue WeightTask::input(const HostBatch& batch, Device device) {
  return {batch["input"].to(device), Tensor()};
}

std::vector<Tensor> WeightTask::targets(const HostBatch&) const {
  return {};
}

Tensor WeightTask::loss(const LayerValue& output, const std::vector<Tensor>&, Device) {
  return sum(output.x);
}

std::unique_ptr<EvalPass> WeightTask::eval_pass(const std::string&, int64_t, int64_t) {
  return std::make_unique<NoEvalPass>();
}

EvalResult WeightTask::summarize(const EvalCounts&) const {
  return {};
}

bool WeightTask::has_split(const std::string&) const {
  return false;
}

std::string WeightTask::best_metric() const {
  return "loss";
}

bool WeightTask::lower_is_better() const {
  return true;
}

std::map<std::string, std::string> WeightTask::checkpoint_texts() const {
  return {};
}

std::string WeightTask::describe() const {
  return description_;
}

const char* WeightTask::item_name() const {
  return "items";
}

}  // namespace sonata::testing
