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
                                  Reducer* reducer) {
  const int M = options_.micro_batches;
  std::vector<LayerValue> inputs;
  if (stage_->is_first()) inputs = split_micro_batches(batch, M);
  std::vector<std::vector<Tensor>> micro_targets(static_cast<size_t>(M));
  if (stage_->is_last() && !targets.empty())
    micro_targets = split_targets(targets, targets[0].size(0), M);
  return step_micro_batches(M, inputs, micro_targets, reducer);
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

PipelineStepResult Pipeline::step_micro_batches(int micro_batches,
                                                const std::vector<LayerValue>& inputs,
                                                const std::vector<std::vector<Tensor>>& targets,
                                                Reducer* reducer) {
  const auto start = Clock::now();
  PipelineStepResult result;
  const int M = micro_batches, S = stage_->count(), s = stage_->index();
  const bool first = stage_->is_first(), last = stage_->is_last();
  ProcessGroup& group = *group_;
  using Kind = PipeAction::Kind;
  SONATA_CHECK(M >= 1, "pipeline: a step needs at least one micro-batch, got ", M);
  SONATA_CHECK(!first || inputs.size() == size_t(M), "pipeline: stage 0 got ", inputs.size(),
               " inputs for ", M, " micro-batches");
  SONATA_CHECK(!last || targets.size() == size_t(M), "pipeline: the last stage got ",
               targets.size(), " target sets for ", M, " micro-batches");
  const std::vector<std::vector<Tensor>>& micro_targets = targets;

  std::vector<InFlight> flight(static_cast<size_t>(M));
  std::vector<std::shared_ptr<Work>> sends;
  Tensor loss_sum;

  // Messages to and from the next stage follow that stage's schedule: our send of an
  // activation where it runs the forward, our receive of its gradient where it runs the
  // backward. Each is posted as soon as the order and our own progress allow.
  const std::vector<PipeAction> downstream =
      last ? std::vector<PipeAction>{} : schedule_actions(options_.schedule, s + 1, S, M);
  size_t posted = 0;
  auto post_downstream = [&]() {
    for (; posted < downstream.size(); ++posted) {
      InFlight& m = flight[size_t(downstream[posted].micro_batch)];
      if (!m.forward_done) return;  // its forward comes later on this stage
      if (downstream[posted].kind == Kind::forward) {
        for (auto& work : send_value(group, m.output, s + 1, downstream[posted].micro_batch))
          sends.push_back(std::move(work));
      } else {
        m.grad = empty(m.output.x.shape(), m.output.x.options());
        m.grad_work = group.recv(m.grad, s + 1,
                                 pipe_tag(downstream[posted].micro_batch, PipeMessage::gradient));
      }
    }
  };

  for (const PipeAction& action : schedule_actions(options_.schedule, s, S, M)) {
    InFlight& m = flight[size_t(action.micro_batch)];
    if (action.kind == Kind::forward) {
      if (first) {
        m.input = inputs[size_t(action.micro_batch)];
      } else {
        m.input = recv_value(group, s - 1, action.micro_batch, &result.wait_seconds);
        if (is_floating(m.input.x.dtype())) m.input.x.set_requires_grad(true);
      }
      m.output = stage_->forward(m.input);
      if (last) {
        m.loss = loss_(m.output, micro_targets[size_t(action.micro_batch)]) / double(M);
        const Tensor value = m.loss.detach().to(DType::f64);
        loss_sum = loss_sum.defined() ? loss_sum + value : value;
      }
      m.forward_done = true;
      post_downstream();
      continue;
    }
    // Backward: accumulate into the parameters (and the reducer's buckets).
    const bool final_backward = action.micro_batch + 1 == M;
    const bool reducing = reducer && final_backward;
    if (reducing) {
      // Hybrid: the reducer's all-reduces (the replica communicator) start in this backward.
      // NCCL's user guide warns that operations on two communicators in flight at once, not
      // issued in one order on every rank, can deadlock: the stage communicator's messages
      // are finished first (none of them waits on this rank any more: every peer's matching
      // operation comes before its own final backward), and this stage's last gradient is
      // sent after finish(), which orders it after the all-reduces on the device.
      for (auto& work : sends) timed_wait(*work, &result.wait_seconds);
      sends.clear();
    }
    std::optional<NoSync> no_sync;
    if (reducer) {
      no_sync.emplace(*reducer, !final_backward);
      reducer->prepare_for_backward();
    }
    if (last) {
      m.loss.backward();
    } else {
      SONATA_CHECK(m.grad_work, "pipeline: the gradient of micro-batch ", action.micro_batch,
                   " was never received");
      timed_wait(*m.grad_work, &result.wait_seconds);
      if (m.output.x.requires_grad()) m.output.x.backward(m.grad);
    }
    no_sync.reset();
    if (reducing) reducer->finish();
    if (!first) {
      Tensor grad = m.input.x.grad();
      if (!grad.defined()) grad = zeros_like(m.input.x);
      sends.push_back(group.send(grad.contiguous(), s - 1,
                                 pipe_tag(action.micro_batch, PipeMessage::gradient)));
    }
    m = InFlight{};  // the activations and the graph are freed here
    m.forward_done = true;
    post_downstream();
  }
  for (auto& work : sends) timed_wait(*work, &result.wait_seconds);

  // The loss: computed on the last stage, reported by stage 0 too.
  if (last) result.loss = loss_sum.item();
  if (S > 1 && (first || last)) {
    Tensor word =
        full({1}, last ? result.loss : 0.0, TensorOptions{}.with(DType::f64).with(group.device()));
    const int tag = pipe_tag(M, PipeMessage::loss);
    if (last) timed_wait(*group.send(word, 0, tag), &result.wait_seconds);
    if (first) {
      timed_wait(*group.recv(word, S - 1, tag), &result.wait_seconds);
      result.loss = word.item();
    }
  }
  result.step_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace sonata
