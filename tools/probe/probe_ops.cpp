#include "tools/probe/probe_ops.h"

#include "base/error.h"
#include "engine/io/npy.h"
#include "engine/ops.h"

namespace sonata {

CtcOptions probe_ctc_options(const ProbeOptions& options) {
  CtcOptions ctc;
  ctc.blank = options.blank;
  ctc.zero_infinity = options.zero_infinity;
  ctc.reduction = options.reduction == "none"  ? Reduction::none
                  : options.reduction == "sum" ? Reduction::sum
                  : options.reduction == "mean"
                      ? Reduction::mean
                      : throw Error(str("probe: --reduction '", options.reduction,
                                        "' is not none, sum or mean"));
  return ctc;
}

Tensor load_probe_integers(const std::string& path, const char* flag) {
  SONATA_CHECK(!path.empty(), "probe: ", flag, " is required here");
  const Tensor t = load_npy(path);
  SONATA_CHECK(t.dtype() == DType::i64 || t.dtype() == DType::i32, "probe: ", flag, " ", path,
               " must hold integers, not ", dtype_name(t.dtype()));
  return t.to(DType::i64);
}

Tensor probe_ctc_loss(const Tensor& log_probs, const Tensor& input_lengths,
                      const ProbeOptions& options) {
  return ctc_loss(log_probs, load_probe_integers(options.targets, "--targets"), input_lengths,
                  load_probe_integers(options.target_lengths, "--target-lengths"),
                  probe_ctc_options(options));
}

NamedTensors run_probe_op(const ProbeOptions& options) {
  SONATA_CHECK(options.op == "ctc_loss", "probe: unknown --op '", options.op,
               "' (known: ctc_loss)");
  SONATA_CHECK(!options.log_probs.empty(), "probe: --op ctc_loss needs --log-probs lp.npy");
  Tensor log_probs = load_npy(options.log_probs);
  SONATA_CHECK(log_probs.dtype() == DType::f32 || log_probs.dtype() == DType::f64,
               "probe: --log-probs ", options.log_probs, " must hold float32 or float64, not ",
               dtype_name(log_probs.dtype()));
  log_probs = log_probs.to(Device::parse(options.device)).detach();
  log_probs.set_requires_grad(true);
  const Tensor loss = probe_ctc_loss(
      log_probs, load_probe_integers(options.input_lengths, "--input-lengths"), options);
  // Per-sample losses are summed, so "grad" is one tensor whatever the reduction.
  loss.backward(loss.dim() == 0 ? Tensor() : ones_like(loss));
  NamedTensors out{{"loss", loss}, {"grad", log_probs.grad()}};
  for (auto& [name, t] : out) t = t.detach().to(Device::cpu());
  return out;
}

}  // namespace sonata
