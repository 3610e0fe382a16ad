#pragma once
// A Task for the training loop's own tests: the model is one parameter vector, `weight`
// (ones), and everything but the items, their batches and the loss has a fixed answer: no
// evaluation split, "loss" the best metric (lower is better), no checkpoint texts. A test
// derives from it and says what its items are and how the loss reads them.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "train/task.h"

namespace sonata::testing {

class WeightTask : public Task {
 public:
  // `size`: the weight's length; `description`: what describe() says.
  WeightTask(int64_t size, std::string description);

  Module& model() override { return *model_; }
  std::shared_ptr<Module> shared_model() override { return model_; }
  EvalCounts evaluate(const std::string& split, Device device, int64_t rank,
                      int64_t world) override;
  EvalResult summarize(const EvalCounts& totals) const override;
  bool has_split(const std::string& split) const override;
  std::string best_metric() const override;
  bool lower_is_better() const override;
  std::map<std::string, std::string> checkpoint_texts() const override;
  std::string describe() const override;
  const char* item_name() const override;

 protected:
  const Tensor& weight() const { return weight_; }

 private:
  std::shared_ptr<Module> model_;
  Tensor weight_;
  std::string description_;
};

}  // namespace sonata::testing
