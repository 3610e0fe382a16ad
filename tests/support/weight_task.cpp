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

}  // namespace

WeightTask::WeightTask(int64_t size, std::string description)
    : description_(std::move(description)) {
  auto weights = std::make_shared<Weights>(size);
  weight_ = weights->weight;
  model_ = std::move(weights);
}

EvalCounts WeightTask::evaluate(const std::string&, Device, int64_t, int64_t) {
  return {};
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
