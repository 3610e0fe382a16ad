#include "train/task.h"

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/deferred_init.h"
#include "train/trainer_options.h"

namespace sonata {

bool builds_model_deferred(const TrainerOptions& options) {
  return options.pipeline_stages > 1 && !options.eval_only;
}

// The defaults of the pipeline hooks: a task whose model has no layer sequence.
LayerSequence Task::pipeline_layers() {
  throw Error("--pipeline-stages: this task's model cannot be cut into pipeline stages");
}

LayerValue Task::pipeline_input(const HostBatch&, Device) {
  throw Error("--pipeline-stages: this task has no pipeline input");
}

std::vector<Tensor> Task::pipeline_targets(const HostBatch&) const {
  throw Error("--pipeline-stages: this task has no pipeline targets");
}

Tensor Task::pipeline_loss(const LayerValue&, const std::vector<Tensor>&, Device) {
  throw Error("--pipeline-stages: this task has no pipeline loss");
}

std::unique_ptr<EvalPass> Task::eval_pass(const std::string&, int64_t, int64_t) {
  throw Error("--pipeline-stages: this task cannot evaluate batch by batch through a pipeline");
}

EvalCounts Task::evaluate(const std::string& split, Device device, int64_t rank, int64_t world) {
  const std::unique_ptr<EvalPass> pass = eval_pass(split, rank, world);
  const LayerSequence layers = pipeline_layers();
  // One process's evaluation runs the whole model: one built deferred is made whole here.
  std::vector<Tensor> whole;
  for (const auto& [name, tensor] : model().state_dict()) whole.push_back(tensor);
  materialise(whole);
  NoGradGuard no_grad;
  Module& net = model();
  net.eval();
  for (int64_t b = 0; b < pass->batch_count(); ++b) {
    const HostBatch batch = pass->batch(b);
    pass->add(run_layers(layers, {0, layers.size()}, pass->input(batch, device)), batch);
  }
  net.train();
  return pass->finish();
}

}  // namespace sonata
