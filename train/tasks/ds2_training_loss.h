#pragma once
// A speech model's training loss as the trainer computes it (DeepSpeech2's recipe, for every
// model of the speech family): the logits (forward_logits) and the fused log_softmax + CTC
// (ctc_loss_from_logits), blank 0, mean over the batch, zero_infinity. SpeechTask::loss() and
// the DS2 benchmarks (bench_models --work ds2, bench_ddp) both call it, so that the
// benchmarks time what trains.
#include "engine/ops/ctc.h"
#include "engine/tensor.h"
#include "models/model_family.h"

namespace sonata {

CtcOptions ds2_ctc_options();

// `input` [N, 1, T, mels] with `input_lengths` frames; `targets` padded [N, S] with
// `target_lengths`. A 0-dim f32 tensor.
Tensor ds2_training_loss(SpeechModel& model, const Tensor& input, const Tensor& input_lengths,
                         const Tensor& targets, const Tensor& target_lengths);

}  // namespace sonata
