#include "comm/pipeline/partition.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <sstream>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"

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

std::vector<double> measure_layer_times(const LayerSequence& layers, const LayerValue& sample) {
  using Clock = std::chrono::steady_clock;
  const LayerRange all{0, layers.size()};
  NamedTensors saved_buffers;
  for (const auto& [name, tensor] : layer_state_dict(layers, all))
    if (!tensor.requires_grad()) saved_buffers.emplace_back(name, tensor.detach().clone());
  std::vector<std::pair<Tensor, Tensor>> saved_grads;
  for (const auto& [name, tensor] : layer_parameters(layers, all))
    saved_grads.emplace_back(tensor, tensor.grad().defined() ? tensor.grad().clone() : Tensor());

  std::vector<double> seconds;
  LayerValue value = sample;
  for (const ModelLayer& layer : layers) {
    LayerValue input{value.x.detach(), value.lengths};
    if (is_floating(input.x.dtype())) input.x.set_requires_grad(true);
    const auto start = Clock::now();
    LayerValue output = layer.forward(input);
    if (output.x.requires_grad()) output.x.backward(ones_like(output.x));
    // Reading one element waits for the device's queued work (CUDA); a no-op wait on the CPU.
    if (output.x.numel() > 0) (void)output.x.detach().reshape({-1}).select(0, 0).item();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    value = {output.x.detach(), output.lengths};
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

}  // namespace sonata
