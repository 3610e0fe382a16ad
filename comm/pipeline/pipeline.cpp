#include "comm/pipeline/pipeline.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "base/error.h"
#include "comm/pipeline/micro_batch.h"
#include "comm/pipeline/transfer.h"
#include "engine/autograd/grad_mode.h"
#include "engine/nn/release.h"
#include "engine/ops.h"

namespace sonata {
namespace {

using Clock = std::chrono::steady_clock;

// What one micro-batch keeps between its forward and its backward.
struct InFlight {
  LayerValue input;   // a leaf that requires grad, except on the first stage
  LayerValue output;  // sent downstream (kept until the send is done and backward has run)
  Tensor loss;        // the last stage's loss / M
  Tensor grad;        // the received gradient of `output.x`
  std::shared_ptr<Work> grad_work;
  bool forward_done = false;
};

}  // namespace

PipelineStage::PipelineStage(LayerSequence layers, std::vector<LayerRange> ranges, int stage)
    : layers_(std::move(layers)), ranges_(std::move(ranges)), stage_(stage) {
  SONATA_CHECK(stage >= 0 && size_t(stage) < ranges_.size(), "pipeline: stage ", stage,
               " does not exist in a partition of ", ranges_.size(), " stages");
  size_t next = 0;
  for (const LayerRange& range : ranges_) {
    SONATA_CHECK(range.begin == next && range.end > range.begin,
                 "pipeline: stages must cover the layers in order, each with at least one");
    next = range.end;
  }
  SONATA_CHECK(next == layers_.size(), "pipeline: the stages cover ", next, " of the model's ",
               layers_.size(), " layers");
}

std::vector<Tensor> PipelineStage::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, tensor] : named_parameters()) out.push_back(tensor);
  return out;
}

NamedTensors PipelineStage::other_stages_state() const {
  const NamedTensors mine = state_dict();
  auto is_mine = [&](const Tensor& tensor) {
    for (const auto& [name, own] : mine)
      if (own.same(tensor)) return true;
    return false;
  };
  NamedTensors others;
  for (size_t s = 0; s < ranges_.size(); ++s) {
    if (int(s) == stage_) continue;
    for (auto& [name, tensor] : layer_state_dict(layers_, ranges_[s]))
      if (!is_mine(tensor)) others.emplace_back(name, tensor);
  }
  // The whole layers that were cut into row pieces: every stage trains pieces instead.
  std::vector<const Module*> seen;
  for (const ModelLayer& layer : layers_)
    for (const auto& [prefix, module] : layer.whole) {
      if (std::find(seen.begin(), seen.end(), module.get()) != seen.end()) continue;
      seen.push_back(module.get());
      for (auto& [name, tensor] : module->state_dict())
        others.emplace_back(prefix + "." + name, tensor);
    }
  return others;
}

void PipelineStage::release_other_stages() const {
  release_storage(other_stages_state());
}

Pipeline::Pipeline(std::shared_ptr<ProcessGroup> group, std::shared_ptr<PipelineStage> stage,
                   PipelineLoss loss, const PipelineOptions& options)
    : group_(std::move(group)),
      stage_(std::move(stage)),
      loss_(std::move(loss)),
      options_(options) {
  SONATA_CHECK(group_ && stage_, "pipeline: a group and a stage are needed");
  SONATA_CHECK(group_->world_size() == stage_->count(), "pipeline: the stage group has ",
               group_->world_size(), " ranks but the model is cut into ", stage_->count(),
               " stages (one rank per stage)");
  SONATA_CHECK(group_->rank() == stage_->index(), "pipeline: rank ", group_->rank(),
               " of the stage group must run stage ", group_->rank(), ", not ", stage_->index());
  SONATA_CHECK(!stage_->is_last() || loss_, "pipeline: the last stage needs a loss");
  schedule_actions(options_.schedule, stage_->index(), stage_->count(), options_.micro_batches);
}

PipelineStepResult Pipeline::step(const LayerValue& batch, const std::vector<Tensor>& targets,
                                  Reducer* reducer, LossScaler* scaler) {
  const int M = options_.micro_batches;
  std::vector<LayerValue> inputs;
  if (stage_->is_first()) inputs = split_micro_batches(batch, M);
  std::vector<std::vector<Tensor>> micro_targets(static_cast<size_t>(M));
  if (stage_->is_last() && !targets.empty())
    micro_targets = split_targets(targets, targets[0].size(0), M);
  return step_micro_batches(M, inputs, micro_targets, reducer, scaler);
}

void Pipeline::forward_only(int64_t count, const std::function<LayerValue(int64_t)>& input,
                            const std::function<void(int64_t, const LayerValue&)>& take) {
  NoGradGuard no_grad;
  const int s = stage_->index();
  // One batch in flight: tags can repeat, which keeps them below the state exchanges'
  // (message_tags.h).
  for (int64_t b = 0; b < count; ++b) {
    const int tag_batch = int(b % kForwardTagCycle);
    const LayerValue value =
        stage_->is_first() ? input(b) : recv_value(*group_, s - 1, tag_batch, nullptr);
    const LayerValue output = stage_->forward(value);
    if (stage_->is_last()) {
      take(b, output);
    } else {
      for (const auto& work : send_value(*group_, output, s + 1, tag_batch)) work->synchronize();
    }
  }
}

namespace {

// One step of the schedule on this stage: what the micro-batches keep between their forward
// and backward, and the messages to the neighbours. Pipeline::step_micro_batches runs the
// schedule's actions through it, forward() or backward(), then finish().
class ScheduledStep {
 public:
  ScheduledStep(ProcessGroup& group, const PipelineStage& stage, const PipelineLoss& loss,
                PipelineSchedule schedule, int micro_batches, Reducer* reducer, LossScaler* scaler)
      : group_(group),
        stage_(stage),
        loss_(loss),
        M_(micro_batches),
        s_(stage.index()),
        first_(stage.is_first()),
        last_(stage.is_last()),
        reducer_(reducer),
        scaler_(scaler),
        flight_(static_cast<size_t>(micro_batches)),
        // Messages to and from the next stage follow that stage's schedule.
        downstream_(last_ ? std::vector<PipeAction>{}
                          : schedule_actions(schedule, s_ + 1, stage.count(), micro_batches)) {
    if (last_) result_.losses.resize(size_t(M_));
  }

  // Micro-batch m's forward: its input (given on the first stage, received elsewhere), the
  // stage's layers, and on the last stage its loss, scaled and divided by M.
  void forward(int micro_batch, const LayerValue* input, const std::vector<Tensor>* targets) {
    InFlight& m = flight_[size_t(micro_batch)];
    if (first_) {
      m.input = *input;
    } else {
      m.input = recv_value(group_, s_ - 1, micro_batch, &result_.wait_seconds);
      if (is_floating(m.input.x.dtype())) m.input.x.set_requires_grad(true);
    }
    m.output = stage_.forward(m.input);
    if (last_) {
      const Tensor loss = loss_(m.output, *targets);
      result_.losses[size_t(micro_batch)] = loss.detach();
      m.loss = (scaler_ ? scaler_->scale(loss) : loss) / double(M_);
      const Tensor value = m.loss.detach().to(DType::f64);
      loss_sum_ = loss_sum_.defined() ? loss_sum_ + value : value;
    }
    m.forward_done = true;
    post_downstream();
  }

  // Micro-batch m's backward: accumulated into the parameters (and the reducer's buckets),
  // its input's gradient sent upstream.
  void backward(int micro_batch) {
    InFlight& m = flight_[size_t(micro_batch)];
    const bool final_backward = micro_batch + 1 == M_;
    const bool reducing = reducer_ && final_backward;
    if (reducing) {
      // Hybrid: the reducer's all-reduces (the replica communicator) start in this backward.
      // NCCL's user guide warns that operations on two communicators in flight at once, not
      // issued in one order on every rank, can deadlock: the stage communicator's messages
      // are finished first (none of them waits on this rank any more: every peer's matching
      // operation comes before its own final backward), and this stage's last gradient is
      // sent after finish(), which orders it after the all-reduces on the device.
      for (auto& work : sends_) timed_wait(*work, &result_.wait_seconds);
      sends_.clear();
    }
    std::optional<NoSync> no_sync;
    if (reducer_) {
      no_sync.emplace(*reducer_, !final_backward);
      reducer_->prepare_for_backward();
    }
    if (last_) {
      m.loss.backward();
    } else {
      SONATA_CHECK(m.grad_work, "pipeline: the gradient of micro-batch ", micro_batch,
                   " was never received");
      timed_wait(*m.grad_work, &result_.wait_seconds);
      if (m.output.x.requires_grad()) m.output.x.backward(m.grad);
    }
    no_sync.reset();
    if (reducing) reducer_->finish();
    if (!first_) {
      Tensor grad = m.input.x.grad();
      if (!grad.defined()) grad = zeros_like(m.input.x);
      sends_.push_back(
          group_.send(grad.contiguous(), s_ - 1, pipe_tag(micro_batch, PipeMessage::gradient)));
    }
    m = InFlight{};  // the activations and the graph are freed here
    m.forward_done = true;
    post_downstream();
  }

  // The sends finished, and the loss: computed on the last stage, reported by stage 0 too.
  PipelineStepResult finish() {
    for (auto& work : sends_) timed_wait(*work, &result_.wait_seconds);
    if (last_) result_.loss = loss_sum_.item();
    if (stage_.count() > 1 && (first_ || last_)) {
      Tensor word = full({1}, last_ ? result_.loss : 0.0,
                         TensorOptions{}.with(DType::f64).with(group_.device()));
      const int tag = pipe_tag(M_, PipeMessage::loss);
      if (last_) timed_wait(*group_.send(word, 0, tag), &result_.wait_seconds);
      if (first_) {
        timed_wait(*group_.recv(word, stage_.count() - 1, tag), &result_.wait_seconds);
        result_.loss = word.item();
      }
    }
    return std::move(result_);
  }

 private:
  // Our send of an activation where the next stage runs the forward, our receive of its
  // gradient where it runs the backward: each posted as soon as that order and our own
  // progress allow.
  void post_downstream() {
    using Kind = PipeAction::Kind;
    for (; posted_ < downstream_.size(); ++posted_) {
      const PipeAction& action = downstream_[posted_];
      InFlight& m = flight_[size_t(action.micro_batch)];
      if (!m.forward_done) return;  // its forward comes later on this stage
      if (action.kind == Kind::forward) {
        for (auto& work : send_value(group_, m.output, s_ + 1, action.micro_batch))
          sends_.push_back(std::move(work));
      } else {
        m.grad = empty(m.output.x.shape(), m.output.x.options());
        m.grad_work =
            group_.recv(m.grad, s_ + 1, pipe_tag(action.micro_batch, PipeMessage::gradient));
      }
    }
  }

  ProcessGroup& group_;
  const PipelineStage& stage_;
  const PipelineLoss& loss_;
  const int M_, s_;
  const bool first_, last_;
  Reducer* reducer_;
  LossScaler* scaler_;
  std::vector<InFlight> flight_;
  const std::vector<PipeAction> downstream_;
  size_t posted_ = 0;
  std::vector<std::shared_ptr<Work>> sends_;
  Tensor loss_sum_;
  PipelineStepResult result_;
};

}  // namespace

PipelineStepResult Pipeline::step_micro_batches(int micro_batches,
                                                const std::vector<LayerValue>& inputs,
                                                const std::vector<std::vector<Tensor>>& targets,
                                                Reducer* reducer, LossScaler* scaler) {
  const auto start = Clock::now();
  const int M = micro_batches;
  SONATA_CHECK(M >= 1, "pipeline: a step needs at least one micro-batch, got ", M);
  SONATA_CHECK(!stage_->is_first() || inputs.size() == size_t(M), "pipeline: stage 0 got ",
               inputs.size(), " inputs for ", M, " micro-batches");
  SONATA_CHECK(!stage_->is_last() || targets.size() == size_t(M), "pipeline: the last stage got ",
               targets.size(), " target sets for ", M, " micro-batches");
  ScheduledStep step(*group_, *stage_, loss_, options_.schedule, M, reducer, scaler);
  for (const PipeAction& action :
       schedule_actions(options_.schedule, stage_->index(), stage_->count(), M)) {
    const size_t m = size_t(action.micro_batch);
    if (action.kind == PipeAction::Kind::forward)
      step.forward(action.micro_batch, stage_->is_first() ? &inputs[m] : nullptr,
                   stage_->is_last() ? &targets[m] : nullptr);
    else
      step.backward(action.micro_batch);
  }
  PipelineStepResult result = step.finish();
  result.step_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace sonata
