// CTC loss on CUDA against the CPU reference, for f32, f16 and bf16 log-probabilities and
// the fused-from-logits variant: ragged lengths, repeats, empty targets, zero_infinity, and
// 300-label targets (601 states: more than one recursion block's threads). Then the launch
// shapes of kernels/common/ctc_plan.h: small batches (1, 2, 4) whose forward runs beta beside
// alpha, in f32 and f64 against the CPU's double (same inputs, no rounding through f32), and
// a no-grad forward (alpha only) against a training one (alpha and beta in one launch).
#include <catch2/catch.hpp>

#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/ctc.h"
#include "engine/random.h"
#include "tests/cases/ctc_cases.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// log_probs as the input under test (normalised on the CPU first), so that the CTC kernels
// alone are compared; the targets and lengths go to the device with them.
void require_ctc_parity(const CtcCase& c, const CtcOptions& options, uint64_t seed,
                        bool padded = true) {
  const Tensor logits = parity_input({c.frames, c.batch(), c.classes}, seed, -3, 3, false);
  const Tensor log_probs = log_softmax(logits, 2).detach().set_requires_grad(true);
  const Tensor targets = padded ? c.padded_targets(c.blank) : c.concatenated_targets();
  const std::vector<Tensor> inputs{log_probs, targets, c.input_lengths_tensor(),
                                   c.target_lengths_tensor()};
  {
    INFO("ctc_loss");
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return ctc_loss(in[0], in[1], in[2], in[3], options);
        },
        inputs);
  }
  {
    INFO("ctc_loss_from_logits");
    const Tensor leaf = logits.detach().set_requires_grad(true);
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return ctc_loss_from_logits(in[0], in[1], in[2], in[3], options);
        },
        {leaf, targets, c.input_lengths_tensor(), c.target_lengths_tensor()});
  }
}

}  // namespace

TEST_CASE("cuda ctc_loss matches the CPU on every case of the table", "[cuda][ctc]") {
  uint64_t seed = 800;
  for (const NamedCtcCase& named : ctc_cases()) {
    const CtcCase& c = named.batch;
    for (Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
      INFO(named.name << ", reduction " << int(reduction));
      const CtcOptions options = ctc_options(c, reduction, named.zero_infinity);
      require_ctc_parity(c, options, seed++, true);
      require_ctc_parity(c, options, seed++, false);
    }
  }
}

TEST_CASE("cuda ctc_loss with 300 labels", "[cuda][ctc]") {
  Generator generator(820, 0);
  const std::vector<double> u = rand({500}, {}, &generator).to_vector<double>();
  CtcCase c{700, 29, 0, {700, 520}, {{}, {}}};
  for (size_t j = 0; j < 300; ++j) c.targets[0].push_back(1 + int64_t(u[j] * 28));
  for (size_t j = 300; j < 500; ++j) c.targets[1].push_back(1 + int64_t(u[j] * 28));
  require_ctc_parity(c, ctc_options(c, Reduction::mean), 821);
  require_ctc_parity(c, ctc_options(c, Reduction::sum), 822, false);
}

namespace {

// Losses and, when the loss was recorded (log_probs requiring grad with `differentiate`,
// grad mode on), the gradient of sum(loss * weights) w.r.t. log_probs, as f64 on the CPU.
struct CtcRun {
  std::vector<double> loss, grad;
};

CtcRun run_ctc(const Tensor& log_probs64, const CtcCase& c, const CtcOptions& options, DType dtype,
               Device device, bool differentiate) {
  Tensor log_probs = log_probs64.to(dtype).to(device).detach();
  if (differentiate) log_probs.set_requires_grad(true);
  const Tensor targets = c.padded_targets(c.blank);
  const Tensor loss =
      ctc_loss(log_probs, targets, c.input_lengths_tensor(), c.target_lengths_tensor(), options);
  CtcRun run{loss.to(Device::cpu()).to_vector<double>(), {}};
  if (loss.requires_grad()) {
    Generator generator(31, 2);
    const Tensor weights = add(rand(loss.shape(), {}, &generator), 0.5);
    sum(mul(loss, weights.to(loss.dtype()).to(device))).backward();
    run.grad = log_probs.grad().to(Device::cpu()).to_vector<double>();
  }
  return run;
}

void require_close(const std::vector<double>& actual, const std::vector<double>& expected,
                   DType dtype, const char* what) {
  const ParityResult result = compare_tensors(from_vector(actual, {int64_t(actual.size())}),
                                              from_vector(expected, {int64_t(expected.size())}),
                                              parity_tolerance(dtype), what);
  INFO(result.report);
  REQUIRE(result.ok);
}

// CUDA in `dtype` (f32 or f64) against the CPU reference on the same log_probs in the same
// dtype: the loss, and the gradient, which comes from the forward's fused alpha + beta.
void require_small_batch_parity(const CtcCase& c, const CtcOptions& options, uint64_t seed) {
  const Tensor logits = parity_input({c.frames, c.batch(), c.classes}, seed, -3, 3, false);
  const Tensor log_probs64 = log_softmax(logits.to(DType::f64), 2).detach();
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO("dtype " << dtype_name(dtype) << ", batch " << c.batch());
    const CtcRun cpu = run_ctc(log_probs64, c, options, dtype, Device::cpu(), true);
    const CtcRun cuda = run_ctc(log_probs64, c, options, dtype, Device::cuda(), true);
    require_close(cuda.loss, cpu.loss, dtype, "loss");
    require_close(cuda.grad, cpu.grad, dtype, "grad");
  }
}

}  // namespace

TEST_CASE("cuda ctc_loss for batches of 1, 2 and 4: loss and gradient, f32 and f64",
          "[cuda][ctc]") {
  for (int64_t batch : {1, 2, 4}) {
    const CtcCase c = small_batch_case(batch);
    require_small_batch_parity(c, ctc_options(c, Reduction::none), 830);
    require_small_batch_parity(c, ctc_options(c, Reduction::mean), 831);
  }
}

TEST_CASE("cuda ctc_loss for a small batch past 512 states", "[cuda][ctc]") {
  // 300 and 260 labels: 601 and 521 states, each recursion thread covering two.
  Generator generator(840, 0);
  const std::vector<double> u = rand({560}, {}, &generator).to_vector<double>();
  for (int64_t batch : {1, 2}) {
    CtcCase c{700, 29, 0, {700, 650}, {{}, {}}};
    for (size_t j = 0; j < 300; ++j) c.targets[0].push_back(1 + int64_t(u[j] * 28));
    for (size_t j = 300; j < 560; ++j) c.targets[1].push_back(1 + int64_t(u[j] * 28));
    c.input_lengths.resize(size_t(batch));
    c.targets.resize(size_t(batch));
    require_small_batch_parity(c, ctc_options(c, Reduction::sum), 841);
  }
}

TEST_CASE("cuda ctc_loss zero_infinity with an unreachable sample in a small batch",
          "[cuda][ctc]") {
  // Sample 1 needs 3 labels + 2 repeats = 5 frames and has 4: loss and gradient 0. Its beta
  // runs beside its alpha (the likelihood is not known yet) and must not reach the gradient.
  const CtcCase c{6, 4, 0, {6, 4}, {{1, 2}, {1, 1, 1}}};
  require_small_batch_parity(c, ctc_options(c, Reduction::none, true), 850);
  require_small_batch_parity(c, ctc_options(c, Reduction::mean, true), 851);
}

TEST_CASE("cuda ctc_loss: a no-grad forward (alpha only) and a training one (with beta) agree",
          "[cuda][ctc]") {
  const CtcCase c = small_batch_case(2);
  const Tensor logits = parity_input({c.frames, c.batch(), c.classes}, 860, -3, 3, false);
  const Tensor log_probs64 = log_softmax(logits.to(DType::f64), 2).detach();
  const CtcOptions options = ctc_options(c, Reduction::none);
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO("dtype " << dtype_name(dtype));
    CtcRun evaluation;
    {
      // log_probs requires grad, but grad mode is off: nothing is recorded, alpha only.
      NoGradGuard no_grad;
      evaluation = run_ctc(log_probs64, c, options, dtype, Device::cuda(), true);
    }
    REQUIRE(evaluation.grad.empty());
    const CtcRun training = run_ctc(log_probs64, c, options, dtype, Device::cuda(), true);
    // Both launches run the same alpha code per block, so the loss is the same to the bit.
    REQUIRE(evaluation.loss == training.loss);
    const CtcRun cpu = run_ctc(log_probs64, c, options, dtype, Device::cpu(), true);
    require_close(training.grad, cpu.grad, dtype, "grad");
  }
}
