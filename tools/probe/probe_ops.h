#pragma once
// The probe's single-op mode (--op ctc_loss) and the CTC pieces the ds2 path shares with it.
#include <string>

#include "engine/nn/module.h"
#include "engine/ops/ctc.h"
#include "tools/probe/probe_run.h"

namespace sonata {

// --blank, --reduction and --zero-infinity as ctc_loss takes them.
CtcOptions probe_ctc_options(const ProbeOptions& options);

// An integer .npy (targets, lengths) as i64 on the CPU, where ctc_loss reads it; `flag`
// names the option in errors.
Tensor load_probe_integers(const std::string& path, const char* flag);

// ctc_loss(log_probs, --targets, input_lengths, --target-lengths) with the probe's options.
Tensor probe_ctc_loss(const Tensor& log_probs, const Tensor& input_lengths,
                      const ProbeOptions& options);

// --op ctc_loss on --log-probs (in the file's dtype), --targets, --input-lengths and
// --target-lengths: "loss" and "grad", the gradient of the loss (summed first when the
// reduction is none) w.r.t. log_probs, all on the CPU.
NamedTensors run_probe_op(const ProbeOptions& options);

}  // namespace sonata
