#pragma once
// The probe's path for DeepSpeech2 (CTC models): ragged input lengths, log-probabilities,
// output lengths, the CTC loss and one backward.
#include "engine/nn/module.h"
#include "tools/probe/probe_run.h"

namespace sonata {

class Ds2;

// "log_probs" [T', N, C] and "output_lengths" (i64 [N]) for x [N, 1, T, F] with
// --input-lengths (all T without); with --targets and --target-lengths also "loss", and
// with --backward "grad.<param>" for every parameter. x is already in the model's dtype and
// on its device.
NamedTensors probe_ds2(Ds2& model, const Tensor& x, const ProbeOptions& options);

}  // namespace sonata
