#include "tools/probe/probe_ds2.h"

#include "base/error.h"
#include "engine/ops.h"
#include "models/ds2.h"
#include "tools/probe/probe_ops.h"

namespace sonata {

NamedTensors probe_ds2(SpeechModel& model, const Tensor& x, const ProbeOptions& options) {
  SONATA_CHECK(!options.backward || !options.targets.empty(),
               "probe: --backward needs --targets t.npy and --target-lengths tl.npy for the loss");
  Tensor input_lengths;
  if (!options.input_lengths.empty())
    input_lengths = load_probe_integers(options.input_lengths, "--input-lengths");
  const SpeechOutput result = model.forward(x, input_lengths);
  NamedTensors out{{"log_probs", result.output}, {"output_lengths", result.output_lengths}};
  if (options.targets.empty()) return out;
  const Tensor loss = probe_ctc_loss(result.output, result.output_lengths, options);
  out.emplace_back("loss", loss);
  if (options.backward) {
    loss.backward(loss.dim() == 0 ? Tensor() : ones_like(loss));
    for (const auto& [name, p] : model.named_parameters())
      out.emplace_back("grad." + name, p.grad().defined() ? p.grad() : zeros_like(p));
  }
  return out;
}

}  // namespace sonata
