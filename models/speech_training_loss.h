#pragma once
// A speech model's training loss as the trainer computes it (DeepSpeech2's recipe, for every
// model of the speech family): the fused log_softmax + CTC of the logits
// (ctc_loss_from_logits), blank 0, mean over the batch, zero_infinity. SpeechTask::loss()
// (of its layers' output, SpeechModel::logit_layers) and the DS2 benchmarks (bench_models
// --work ds2, bench_ddp, through speech_training_loss) both call ctc_training_loss, so that
// the benchmarks time what trains. It sits with the models, below train/, so that the
// benchmarks reach it without the trainer's insides.
#include <cstdint>

#include "engine/ops/ctc.h"
#include "engine/tensor.h"
#include "models/model_family.h"

namespace sonata {

// The class a speech model's logits reserve for CTC's blank: the vocabulary's blank
// (data/text/vocabulary.h, Vocabulary::kBlank; speech_task.cpp asserts they agree, since
// models/ sits beside data/ and includes nothing of it).
inline constexpr int64_t kCtcBlank = 0;

CtcOptions speech_ctc_options();

// `logits` [T', N, C] with `logit_lengths` frames; `targets` padded [N, S] (or concatenated)
// with `target_lengths`. A 0-dim f32 tensor.
Tensor ctc_training_loss(const Tensor& logits, const Tensor& logit_lengths, const Tensor& targets,
                         const Tensor& target_lengths);

// The logits of `input` [N, 1, T, mels] with `input_lengths` frames (forward_logits), then
// ctc_training_loss.
Tensor speech_training_loss(SpeechModel& model, const Tensor& input, const Tensor& input_lengths,
                            const Tensor& targets, const Tensor& target_lengths);

}  // namespace sonata
