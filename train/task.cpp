#include "train/task.h"

#include "base/nvtx.h"
#include "engine/autograd/grad_mode.h"
#include "engine/deferred_init.h"
#include "train/trainer_options.h"

namespace sonata {

bool builds_model_deferred(const TrainerOptions& options) {
  return options.pipeline_stages > 1 && !options.eval_only;
}

Tensor batch_loss(Task& task, const HostBatch& batch, Device device) {
  const LayerValue input = task.input(batch, device);
  SONATA_NVTX_RANGE("sonata::step::forward");
  const LayerSequence& layers = task.layers();
  return task.loss(run_layers(layers, {0, layers.size()}, input), task.targets(batch), device);
}

EvalCounts evaluate(Task& task, const std::string& split, Device device, int64_t rank,
                    int64_t world) {
  const std::unique_ptr<EvalPass> pass = task.eval_pass(split, rank, world);
  const LayerSequence& layers = task.layers();
  // One process's evaluation runs the whole model: one built deferred is made whole here.
  std::vector<Tensor> whole;
  for (const auto& [name, tensor] : task.model().state_dict()) whole.push_back(tensor);
  materialise(whole);
  NoGradGuard no_grad;
  Module& net = task.model();
  net.eval();
  for (int64_t b = 0; b < pass->batch_count(); ++b) {
    const HostBatch batch = pass->batch(b);
    pass->add(run_layers(layers, {0, layers.size()}, task.input(batch, device)), batch);
  }
  net.train();
  return pass->finish();
}

}  // namespace sonata
