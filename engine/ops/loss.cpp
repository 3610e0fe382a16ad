// cross_entropy and nll_loss: validation, one fused kernel per direction (kernels/*/
// cross_entropy.h), and the reductions through ordinary differentiable ops so that the
// mean's divisor (the sum of target weights) stays on the device.
#include "engine/ops/loss.h"

#include <string>
#include <vector>

#include "base/error.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "kernels/cpu/cross_entropy.h"
#if SONATA_WITH_CUDA
#include "kernels/cuda/cross_entropy.h"
#endif

namespace sonata {
namespace {

struct ClassLayout {
  int64_t outer = 1, classes = 1, inner = 1;
};

struct LossSpec {
  const char* op;
  const char* scores_name;
  bool normalize;  // scores are logits (log_softmax inside) rather than log-probabilities
  Reduction reduction;
  int64_t ignore_index;
  double label_smoothing;
};

DType loss_dtype(DType scores) {
  return scores == DType::f64 ? DType::f64 : DType::f32;
}

// "[2, 0, 3]": a position in the target, for error messages.
std::string position_str(const Shape& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string out = "[";
  for (size_t d = 0; d < index.size(); ++d) out += (d ? ", " : "") + std::to_string(index[d]);
  return out + "]";
}

// Host-side range check of CPU targets, naming the first offending class and position.
void check_target_values(const LossSpec& spec, const Tensor& target, int64_t classes) {
  const std::vector<int64_t> values = target.to_vector<int64_t>();
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t t = values[i];
    SONATA_CHECK(t == spec.ignore_index || (t >= 0 && t < classes), spec.op, ": target",
                 position_str(target.shape(), int64_t(i)), " = ", t,
                 " is not a class index in [0, ", classes, ") nor ignore_index (",
                 spec.ignore_index, ")");
  }
}

ClassLayout check_inputs(const LossSpec& spec, const Tensor& scores, const Tensor& target,
                         const Tensor& weight) {
  const char* op = spec.op;
  SONATA_CHECK(scores.defined() && target.defined(), op, ": ", spec.scores_name,
               " and target must be defined");
  SONATA_CHECK(is_floating(scores.dtype()), op, ": ", spec.scores_name,
               " must be floating-point, got ", dtype_name(scores.dtype()));
  SONATA_CHECK(scores.dim() >= 1, op, ": ", spec.scores_name,
               " must have shape [N, C, *] or [C], got a scalar");
  SONATA_CHECK(target.dtype() == DType::i64, op, ": target must hold i64 class indices, got ",
               dtype_name(target.dtype()));
  ClassLayout layout;
  Shape expected;
  if (scores.dim() == 1) {
    layout.classes = scores.size(0);
  } else {
    layout.outer = scores.size(0);
    layout.classes = scores.size(1);
    expected.push_back(scores.size(0));
    for (int64_t d = 2; d < scores.dim(); ++d) {
      layout.inner *= scores.size(d);
      expected.push_back(scores.size(d));
    }
  }
  SONATA_CHECK(layout.classes >= 1, op, ": ", spec.scores_name, " ", shape_str(scores.shape()),
               " has no classes");
  SONATA_CHECK(target.shape() == expected, op, ": target must have shape ", shape_str(expected),
               " to match ", spec.scores_name, " ", shape_str(scores.shape()), ", got ",
               shape_str(target.shape()));
  SONATA_CHECK(target.device().is_cpu() || target.device() == scores.device(), op,
               ": target is on ", target.device().str(), " but ", spec.scores_name, " on ",
               scores.device().str());
  if (weight.defined()) {
    SONATA_CHECK(is_floating(weight.dtype()), op, ": weight must be floating-point, got ",
                 dtype_name(weight.dtype()));
    SONATA_CHECK(weight.dim() == 1 && weight.size(0) == layout.classes, op,
                 ": weight must have shape [", layout.classes, "] (one per class), got ",
                 shape_str(weight.shape()));
    SONATA_CHECK(weight.device() == scores.device(), op, ": weight is on ", weight.device().str(),
                 " but ", spec.scores_name, " on ", scores.device().str());
  }
  SONATA_CHECK(spec.label_smoothing >= 0 && spec.label_smoothing <= 1, op,
               ": label_smoothing = ", spec.label_smoothing, " is outside [0, 1]");
  if (target.device().is_cpu()) check_target_values(spec, target, layout.classes);
  return layout;
}

Tensor reduce(const Tensor& per_position, const Tensor& target_weight, Reduction reduction) {
  switch (reduction) {
    case Reduction::none:
      return per_position;
    case Reduction::sum:
      return sum(per_position);
    case Reduction::mean:
      return div(sum(per_position), sum(target_weight));
  }
  SONATA_UNREACHABLE("loss: unknown reduction");
}

Tensor class_loss(const LossSpec& spec, const Tensor& scores, const Tensor& target,
                  const Tensor& weight) {
  const ClassLayout layout = check_inputs(spec, scores, target, weight);
  const DType dtype = loss_dtype(scores.dtype());
  const Tensor in = scores.detach().contiguous();
  const Tensor labels = target.detach().to(in.device()).contiguous();
  const Tensor w = weight.defined() ? weight.detach().to(dtype).contiguous() : Tensor();
  const TensorOptions options = in.options().with(dtype);
  const int64_t positions = layout.outer * layout.inner;
  Tensor loss = empty({positions}, options);
  const Tensor target_weight = empty({positions}, options);
  const Tensor log_sum_exp = empty({positions, 2}, options);  // max, log-sum: kept apart
  const void* w_data = w.defined() ? w.data_ptr() : nullptr;
  if (positions > 0)
    SONATA_BACKEND(in.device(), cross_entropy_forward, in.dtype(), in.data_ptr(),
                   labels.data<int64_t>(), w_data, layout.outer, layout.classes, layout.inner,
                   spec.ignore_index, spec.label_smoothing, spec.normalize, loss.data_ptr(),
                   target_weight.data_ptr(), log_sum_exp.data_ptr());
  const Tensor saved_in = save(in);
  record(spec.op, {scores}, {&loss}, [=](const std::vector<Tensor>& g) {
    const Tensor grad_loss = g[0].to(dtype).contiguous();
    Tensor grad = empty_like(saved_in);
    const void* weights = w.defined() ? w.data_ptr() : nullptr;
    if (positions > 0)
      SONATA_BACKEND(saved_in.device(), cross_entropy_backward, saved_in.dtype(),
                     grad_loss.data_ptr(), saved_in.data_ptr(), labels.data<int64_t>(), weights,
                     log_sum_exp.data_ptr(), layout.outer, layout.classes, layout.inner,
                     spec.ignore_index, spec.label_smoothing, spec.normalize, grad.data_ptr());
    return std::vector<Tensor>{grad};
  });
  return reduce(loss.view(target.shape()), target_weight, spec.reduction);
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight,
                     const CrossEntropyOptions& options) {
  return class_loss({"cross_entropy", "logits", true, options.reduction, options.ignore_index,
                     options.label_smoothing},
                    logits, target, weight);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                const NllLossOptions& options) {
  return class_loss({"nll_loss", "log_probs", false, options.reduction, options.ignore_index, 0.0},
                    log_probs, target, weight);
}

}  // namespace sonata
