#include "comm/pipeline/partition.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <sstream>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/deferred_init.h"

namespace sonata {

std::vector<LayerRange> partition_at(size_t layers, const std::vector<size_t>& cuts) {
  std::vector<LayerRange> stages;
  size_t begin = 0;
  for (size_t cut : cuts) {
    SONATA_CHECK(cut > begin && cut < layers, "pipeline: cut point ", cut,
                 " must exceed the previous one (", begin, ") and lie below the model's ", layers,
                 " layers");
    stages.push_back({begin, cut});
    begin = cut;
  }
  SONATA_CHECK(begin < layers, "pipeline: a model of ", layers, " layers cannot be cut");
  stages.push_back({begin, layers});
  return stages;
}

std::vector<LayerRange> partition_balanced(const std::vector<double>& costs, int stages) {
  const size_t n = costs.size();
  SONATA_CHECK(stages >= 1 && size_t(stages) <= n, "pipeline: ", stages,
               " stages need between 1 and ", n, " (the model's layers)");
  for (size_t i = 0; i < n; ++i)
    SONATA_CHECK(costs[i] >= 0, "pipeline: layer ", i, " has a negative cost ", costs[i]);
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][j]: the smallest largest-stage cost of layers [0, j) in k + 1 stages; from[k][j]
  // where the last of them starts.
  std::vector<std::vector<double>> best(size_t(stages), std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> from(size_t(stages), std::vector<size_t>(n + 1, 0));
  for (size_t j = 1; j <= n; ++j) best[0][j] = prefix[j];
  for (size_t k = 1; k < size_t(stages); ++k)
    for (size_t j = k + 1; j <= n; ++j)
      for (size_t i = k; i < j; ++i) {
        const double cost = std::max(best[k - 1][i], prefix[j] - prefix[i]);
        if (cost <= best[k][j]) {  // `<=`: the latest start wins ties, first stages largest
          best[k][j] = cost;
          from[k][j] = i;
        }
      }
  std::vector<LayerRange> ranges(static_cast<size_t>(stages));
  size_t end = n;
  for (size_t k = size_t(stages); k-- > 0;) {
    const size_t begin = k == 0 ? 0 : from[k][end];
    ranges[k] = {begin, end};
    end = begin;
  }
  return ranges;
}

namespace {

// The largest total cost of a stage.
double busiest(const std::vector<double>& costs, const std::vector<LayerRange>& ranges) {
  double most = 0;
  for (const LayerRange& range : ranges) {
    double total = 0;
    for (size_t i = range.begin; i < range.end; ++i) total += costs[i];
    most = std::max(most, total);
  }
  return most;
}

// One chunk of the fine-grained sequence: rows [begin, end) of layer `layer` (the whole
// layer when it is not cut).
struct Chunk {
  size_t layer;
  int64_t begin, end;
};

}  // namespace

StagePlan partition_with_row_pieces(const LayerSequence& layers, const std::vector<double>& costs,
                                    int stages) {
  SONATA_CHECK(costs.size() == layers.size(), "pipeline: ", costs.size(), " costs for ",
               layers.size(), " layers");
  StagePlan plan;
  plan.layers = layers;
  plan.ranges = partition_balanced(costs, stages);
  if (stages == 1) return plan;

  std::vector<Chunk> chunks;
  std::vector<double> chunk_costs;
  for (size_t i = 0; i < layers.size(); ++i) {
    const int64_t pieces =
        layers[i].rows > 0 ? std::min<int64_t>(layers[i].rows, kRowChunksPerStage * stages) : 1;
    for (int64_t c = 0; c < pieces; ++c) {
      const int64_t rows = std::max<int64_t>(layers[i].rows, 1);
      chunks.push_back({i, rows * c / pieces, rows * (c + 1) / pieces});
      chunk_costs.push_back(costs[i] / double(pieces));
    }
  }
  if (chunks.size() == layers.size()) return plan;
  const std::vector<LayerRange> fine = partition_balanced(chunk_costs, stages);
  if (busiest(chunk_costs, fine) > 0.9 * busiest(costs, plan.ranges)) return plan;

  plan.layers.clear();
  plan.ranges.clear();
  std::vector<bool> cut(layers.size(), false);
  for (const LayerRange& range : fine) {
    const size_t first = plan.layers.size();
    for (size_t c = range.begin; c < range.end;) {
      const size_t layer = chunks[c].layer;
      size_t next = c;
      while (next < range.end && chunks[next].layer == layer) ++next;
      const int64_t begin = chunks[c].begin, end = chunks[next - 1].end;
      if (layers[layer].rows > 0 && (begin > 0 || end < layers[layer].rows)) {
        plan.layers.push_back(row_piece(layers[layer], begin, end));
        cut[layer] = true;
      } else {
        plan.layers.push_back(layers[layer]);
      }
      c = next;
    }
    plan.ranges.push_back({first, plan.layers.size()});
  }
  for (size_t i = 0; i < layers.size(); ++i)
    if (cut[i]) plan.cut_layers.push_back(layers[i].name);
  return plan;
}

std::vector<double> measure_layer_times(const LayerSequence& layers, const LayerValue& sample) {
  using Clock = std::chrono::steady_clock;
  const LayerRange all{0, layers.size()};
  // Deferred tensors (a pipeline's model, engine/deferred_init.h) are made one layer at a
  // time and deferred again after it, which also undoes what the pass did to them.
  NamedTensors saved_buffers;
  for (const auto& [name, tensor] : layer_state_dict(layers, all))
    if (!tensor.requires_grad() && !is_deferred(tensor))
      saved_buffers.emplace_back(name, tensor.detach().clone());
  std::vector<std::pair<Tensor, Tensor>> saved_grads;
  for (const auto& [name, tensor] : layer_parameters(layers, all))
    if (!is_deferred(tensor))
      saved_grads.emplace_back(tensor, tensor.grad().defined() ? tensor.grad().clone() : Tensor());

  std::vector<double> seconds;
  LayerValue value = sample;
  for (size_t i = 0; i < layers.size(); ++i) {
    const ModelLayer& layer = layers[i];
    std::vector<std::pair<Tensor, Tensor>> deferred;  // each handle and its deferred alias
    std::vector<Tensor> to_make;
    for (const auto& [name, tensor] : layer_state_dict(layers, {i, i + 1}))
      if (is_deferred(tensor)) {
        deferred.emplace_back(tensor, tensor.detach());
        to_make.push_back(tensor);
      }
    materialise(to_make);
    LayerValue input{value.x.detach(), value.lengths};
    if (is_floating(input.x.dtype())) input.x.set_requires_grad(true);
    const auto start = Clock::now();
    LayerValue output = layer.forward(input);
    if (output.x.requires_grad()) output.x.backward(ones_like(output.x));
    // Reading one element waits for the device's queued work (CUDA); a no-op wait on the CPU.
    if (output.x.numel() > 0) (void)output.x.detach().reshape({-1}).select(0, 0).item();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    value = {output.x.detach(), output.lengths};
    NoGradGuard no_grad;
    for (auto& [handle, alias] : deferred) {
      handle.set_grad(Tensor());
      handle.set_data(alias);
    }
  }

  NoGradGuard no_grad;
  const NamedTensors state = layer_state_dict(layers, all);
  size_t next = 0;
  for (const auto& [name, tensor] : state)
    if (next < saved_buffers.size() && saved_buffers[next].first == name)
      Tensor(tensor).copy_(saved_buffers[next++].second);
  for (auto& [parameter, grad] : saved_grads) parameter.set_grad(grad);
  return seconds;
}

std::vector<double> broadcast_costs(ProcessGroup& group, const std::vector<double>& costs,
                                    int root) {
  if (group.world_size() == 1 || costs.empty()) return costs;
  Tensor values = from_vector(costs, {int64_t(costs.size())},
                              TensorOptions{}.with(DType::f64).with(group.device()));
  group.broadcast(values, root)->synchronize();
  return values.to_vector<double>();
}

std::string partition_str(const std::vector<LayerRange>& stages) {
  std::ostringstream out;
  for (size_t s = 0; s < stages.size(); ++s) {
    if (s) out << " | ";
    out << stages[s].begin << "-" << (stages[s].end - 1);
  }
  return out.str();
}

std::string stage_plan_str(const StagePlan& plan) {
  std::ostringstream out;
  out << partition_str(plan.ranges);
  for (const std::string& name : plan.cut_layers) {
    out << "; " << name << " rows ";
    bool first = true;
    for (const ModelLayer& layer : plan.layers)
      if (layer.shard.rows > 0 && layer.name.rfind(name + "[", 0) == 0) {  // row_piece's name
        out << (first ? "" : " | ") << layer.shard.begin << "-" << (layer.shard.end - 1);
        first = false;
      }
  }
  return out.str();
}

}  // namespace sonata
