// DS2 on a ragged batch padded to its longest clip against the same batch padded to a
// multiple of 8 frames (SpeechBatcher's default, for fewer cuDNN shapes): with the convs'
// batch norm masked to the valid frames (the default) the loss, the log-probabilities on
// valid frames, every gradient and the running statistics agree up to rounding; without it
// (mask-padding 0, the torch peer's model) the padding changes the loss. The same with the
// sequence-wise BatchNorm1d between RNN layers, masked alike.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops.h"
#include "engine/ops/ctc.h"
#include "engine/random.h"
#include "models/ds2.h"
#include "tests/support/tensor_compare.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

constexpr int64_t kMels = 16;
const std::vector<int64_t> kLengths = {13, 9, 5, 11};
constexpr int64_t kLongest = 13;

struct StepResult {
  double loss = 0;
  Tensor log_probs;  // [T', N, C], frames past each sample's output length zeroed
  NamedTensors gradients, buffers;
};

// One training step's loss and gradients of a fresh seeded model on the fixed batch, its time
// axis padded to `frames`.
StepResult train_step(const std::map<std::string, std::string>& extra, int64_t frames) {
  std::map<std::string, std::string> values = {
      {"num-mels", str(kMels)}, {"conv-channels", "4"}, {"hidden", "8"}, {"layers", "2"}};
  for (const auto& [key, value] : extra) values[key] = value;
  manual_seed(0);
  auto model = std::dynamic_pointer_cast<Ds2>(make_model("ds2", ModelConfig(values)));
  REQUIRE(model);
  model->to(DType::f64);
  model->train();
  manual_seed(1);
  const int64_t batch = int64_t(kLengths.size());
  // Padding past each clip holds noise, not zeros: whatever a padded frame holds must not
  // matter (the batcher writes zeros; the model zeroes them itself).
  const Tensor clips = randn({batch, 1, kLongest, kMels}, TensorOptions{}.with(DType::f64));
  Tensor x = randn({batch, 1, frames, kMels}, TensorOptions{}.with(DType::f64));
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t length = kLengths[size_t(n)];
    x.select(0, n).slice(1, 0, length).copy_(clips.select(0, n).slice(1, 0, length));
  }
  const Ds2Output out = model->forward(x, from_vector(kLengths, {batch}));
  const Tensor targets = from_vector(std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9, 10}, {8});
  const Tensor target_lengths = from_vector(std::vector<int64_t>{3, 2, 1, 2}, {batch});
  const Tensor loss = ctc_loss(out.output, targets, out.output_lengths, target_lengths);
  loss.backward();
  StepResult result;
  result.loss = loss.item();
  const std::vector<int64_t> valid = out.output_lengths.to_vector<int64_t>();
  result.log_probs = out.output.detach().clone();
  for (int64_t n = 0; n < batch; ++n)
    result.log_probs.select(1, n).slice(0, valid[size_t(n)], out.output.size(0)).fill_(0.0);
  for (const auto& [name, parameter] : model->named_parameters())
    result.gradients.emplace_back(name, parameter.grad());
  result.buffers = model->named_buffers();
  return result;
}

// Every variant's step on the batch padded to its longest clip (13 frames) and to 16.
void require_same_step(const std::map<std::string, std::string>& extra) {
  const StepResult longest = train_step(extra, kLongest), multiple = train_step(extra, 16);
  CHECK(multiple.loss == Approx(longest.loss).epsilon(1e-12));
  // The padded batch has one more output frame, 0 on every sample.
  REQUIRE(multiple.log_probs.size(0) == longest.log_probs.size(0) + 1);
  CHECK(relative_error(multiple.log_probs.slice(0, 0, longest.log_probs.size(0)),
                       longest.log_probs) < 1e-12);
  REQUIRE(multiple.gradients.size() == longest.gradients.size());
  for (size_t k = 0; k < longest.gradients.size(); ++k) {
    INFO(longest.gradients[k].first);
    CHECK(relative_error(multiple.gradients[k].second, longest.gradients[k].second) < 1e-10);
  }
  for (size_t k = 0; k < longest.buffers.size(); ++k) {
    INFO(longest.buffers[k].first);
    if (longest.buffers[k].second.dtype() == DType::i64) continue;  // num_batches_tracked
    CHECK(relative_error(multiple.buffers[k].second, longest.buffers[k].second) < 1e-12);
  }
}

}  // namespace

TEST_CASE("ds2 with masked batch norm: padding to 1 or to 8 frames gives the same step",
          "[models][ds2][padding]") {
  require_same_step({});
}

TEST_CASE("ds2 with masked sequence-wise batch norm (GRU, summed): padding changes nothing",
          "[models][ds2][padding]") {
  require_same_step({{"seq-batch-norm", "1"}, {"rnn", "gru"}, {"merge", "sum"}});
}

TEST_CASE("ds2 without masking (the torch peer's model) changes with the padding",
          "[models][ds2][padding]") {
  const StepResult longest = train_step({{"mask-padding", "0"}}, kLongest),
                   multiple = train_step({{"mask-padding", "0"}}, 16);
  CHECK(std::abs(multiple.loss - longest.loss) > 1e-6 * std::abs(longest.loss));
}
