#include "models/speech_training_loss.h"

namespace sonata {

CtcOptions speech_ctc_options() {
  // zero_infinity: a clip too short for its transcript gives no gradient instead of +inf.
  return {.blank = kCtcBlank, .reduction = Reduction::mean, .zero_infinity = true};
}

Tensor ctc_training_loss(const Tensor& logits, const Tensor& logit_lengths, const Tensor& targets,
                         const Tensor& target_lengths) {
  return ctc_loss_from_logits(logits, targets, logit_lengths, target_lengths, speech_ctc_options());
}

Tensor speech_training_loss(SpeechModel& model, const Tensor& input, const Tensor& input_lengths,
                            const Tensor& targets, const Tensor& target_lengths) {
  const SpeechOutput out = model.forward_logits(input, input_lengths);
  return ctc_training_loss(out.output, out.output_lengths, targets, target_lengths);
}

}  // namespace sonata
