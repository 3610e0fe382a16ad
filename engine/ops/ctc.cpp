// The CTC loss ops: validation, workspaces (alpha, and beta when the loss will be
// differentiated: the forward computes both, see kernels/common/ctc_plan.h), the kernels,
// and the reductions, which go through ordinary differentiable ops so that autograd scales
// each sample's incoming gradient exactly as PyTorch's composite ctc_loss does.
#include "engine/ops/ctc.h"

#include <algorithm>
#include <vector>

#include "base/error.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "engine/ops/ctc_targets.h"
#include "kernels/cpu/ctc.h"
#if SONATA_WITH_CUDA
#include "kernels/cuda/ctc.h"
#endif

namespace sonata {
namespace {

// The CPU reference accumulates in double; CUDA in float (double for f64 inputs).
DType accumulate_dtype(const Tensor& log_probs) {
  if (log_probs.device().is_cpu() || log_probs.dtype() == DType::f64) return DType::f64;
  return DType::f32;
}

DType loss_dtype(DType input) {
  return input == DType::f64 ? DType::f64 : DType::f32;
}

void check_scores(const char* op, const char* name, const Tensor& scores, int64_t blank) {
  SONATA_CHECK(scores.defined(), op, ": ", name, " is undefined");
  SONATA_CHECK(is_floating(scores.dtype()), op, ": ", name,
               " must be a floating-point tensor, got ", dtype_name(scores.dtype()));
  SONATA_CHECK(scores.dim() == 3, op, ": ", name, " must have shape [T, N, C], got ",
               shape_str(scores.shape()));
  SONATA_CHECK(blank >= 0 && blank < scores.size(2), op, ": blank = ", blank, " is outside the ",
               scores.size(2), " classes of ", name);
}

kernels::CtcProblem make_problem(const Shape& shape, const CtcBatch& batch,
                                 const CtcOptions& options) {
  kernels::CtcProblem problem;
  problem.max_time = shape[0];
  problem.batch = shape[1];
  problem.classes = shape[2];
  problem.max_states = 2 * batch.max_target_length + 1;
  problem.blank = options.blank;
  problem.zero_infinity = options.zero_infinity;
  return problem;
}

// Per-sample losses of the contiguous log-probabilities `log_probs` (no history), recorded
// as a function of `input` (log_probs itself, or the logits they came from: the gradient
// formula is the same, see engine/ops/ctc.h).
Tensor per_sample_losses(const char* name, const Tensor& input, const Tensor& log_probs,
                         const CtcBatch& batch, const kernels::CtcProblem& problem) {
  const Device device = log_probs.device();
  const TensorOptions accumulate = log_probs.options().with(accumulate_dtype(log_probs));
  const Tensor alpha = empty({problem.batch, problem.max_time, problem.max_states}, accumulate);
  // record() keeps a backward exactly when this holds, so beta is computed exactly when the
  // backward will read it (on CUDA in the same launch as alpha, its chain beside alpha's).
  const bool differentiated = needs_grad({input});
  const Tensor beta = differentiated ? empty_like(alpha) : Tensor();
  const Tensor nll = empty({problem.batch}, accumulate);
  Tensor loss = empty({problem.batch}, log_probs.options().with(loss_dtype(log_probs.dtype())));
  if (problem.batch > 0)
    SONATA_BACKEND(device, ctc_loss_forward, log_probs.dtype(), log_probs.data_ptr(), batch.view(),
                   problem, alpha.data_ptr(), differentiated ? beta.data_ptr() : nullptr,
                   nll.data_ptr(), loss.data_ptr());
  const Tensor saved_log_probs = save(log_probs);
  const DType input_dtype = input.dtype(), grad_loss_dtype = loss.dtype();
  record(name, {input}, {&loss}, [=](const std::vector<Tensor>& g) {
    const Tensor grad_loss = g[0].to(grad_loss_dtype).contiguous();
    Tensor grad = empty_like(saved_log_probs);
    if (problem.batch > 0)
      SONATA_BACKEND(device, ctc_loss_backward, saved_log_probs.dtype(), grad_loss.data_ptr(),
                     saved_log_probs.data_ptr(), batch.view(), problem, alpha.data_ptr(),
                     beta.data_ptr(), nll.data_ptr(), grad.data_ptr());
    return std::vector<Tensor>{grad.dtype() == input_dtype ? grad : grad.to(input_dtype)};
  });
  return loss;
}

Tensor reduce_losses(const Tensor& losses, const CtcBatch& batch, Reduction reduction) {
  switch (reduction) {
    case Reduction::none:
      return losses;
    case Reduction::sum:
      return sum(losses);
    case Reduction::mean: {
      std::vector<double> divisors;
      for (int64_t length : batch.target_lengths)
        divisors.push_back(double(std::max<int64_t>(length, 1)));
      const Tensor lengths = from_vector(divisors, {batch.batch}, losses.options());
      return mean(div(losses, lengths));
    }
  }
  SONATA_UNREACHABLE("ctc_loss: unknown reduction");
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CtcOptions& options) {
  check_scores("ctc_loss", "log_probs", log_probs, options.blank);
  const CtcBatch batch = pack_ctc_batch("ctc_loss", log_probs.shape(), targets, input_lengths,
                                        target_lengths, options.blank, log_probs.device());
  const Tensor contiguous = log_probs.detach().contiguous();
  const Tensor losses = per_sample_losses("ctc_loss", log_probs, contiguous, batch,
                                          make_problem(log_probs.shape(), batch, options));
  return reduce_losses(losses, batch, options.reduction);
}

Tensor ctc_loss_from_logits(const Tensor& logits, const Tensor& targets,
                            const Tensor& input_lengths, const Tensor& target_lengths,
                            const CtcOptions& options) {
  check_scores("ctc_loss_from_logits", "logits", logits, options.blank);
  const CtcBatch batch =
      pack_ctc_batch("ctc_loss_from_logits", logits.shape(), targets, input_lengths, target_lengths,
                     options.blank, logits.device());
  // Half logits on CUDA: log-probabilities in f32, as the loss accumulates.
  const DType lp_dtype =
      is_floating(logits.dtype()) && dtype_size(logits.dtype()) == 2 ? DType::f32 : logits.dtype();
  const Tensor x = cast(logits.detach(), lp_dtype).contiguous();
  const Tensor log_probs = empty_like(x);
  const Shape& shape = x.shape();
  if (x.numel() > 0)
    SONATA_BACKEND(x.device(), softmax, lp_dtype, true, x.data_ptr(), log_probs.data_ptr(),
                   shape[0] * shape[1], shape[2], int64_t(1));
  const Tensor losses = per_sample_losses("ctc_loss_from_logits", logits, log_probs, batch,
                                          make_problem(shape, batch, options));
  return reduce_losses(losses, batch, options.reduction);
}

}  // namespace sonata
