#pragma once
// A Task for the training loop's own tests: the model is one parameter vector, `weight`
// (ones), run as one layer that scales the batch's "input" by it (y = w * x); the loss is
// the sum of that, and everything but the items and their batches has a fixed answer: no
// evaluation split (an evaluation pass of no batches), "loss" the best metric (lower is
// better), no checkpoint texts. A test derives from it and says what its items are, and
// where it needs to, how the loss reads the output.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "train/task.h"

namespace sonata::testing {

class WeightTask : public Task {
 public:
  // `size`: the weight's length; `description`: what describe() says.
  WeightTask(int64_t size, std::string description);

  Module& model() override { return *model_; }
  std::shared_ptr<Module> shared_model() override { return model_; }
  // One layer, "weight": too few to cut into pipeline stages (a pipeline refuses it).
  const LayerSequence& layers() const override { return layers_; }
  // {the batch's "input" on `device`}.
  LayerValue input(const HostBatch& batch, Device device) override;
  // None: the loss reads the output alone.
  std::vector<Tensor> targets(const HostBatch& batch) const override;
  // The sum of the output.
  Tensor loss(const LayerValue& output, const std::vector<Tensor>& targets, Device device) override;
  std::unique_ptr<EvalPass> eval_pass(const std::string& split, int64_t rank,
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
  LayerSequence layers_;
  std::string description_;
};

}  // namespace sonata::testing
