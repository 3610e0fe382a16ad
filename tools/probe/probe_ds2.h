#pragma once
// The probe's path for speech models (DeepSpeech2 and any SpeechModel of the registry: CTC):
// ragged input lengths, log-probabilities, output lengths, the CTC loss and one backward.
#include "engine/nn/module.h"
#include "models/model_family.h"
#include "tools/probe/probe_run.h"

namespace sonata {

// "log_probs" [T', N, C] and "output_lengths" (i64 [N]) for x [N, 1, T, F] with
// --input-lengths (all T without); with --targets and --target-lengths also "loss", and
// with --backward "grad.<param>" for every parameter. x is already in the model's dtype and
// on its device.
NamedTensors probe_ds2(SpeechModel& model, const Tensor& x, const ProbeOptions& options);

}  // namespace sonata
