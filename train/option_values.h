#pragma once
// The optimizer's and the schedule's numbers, refused in the user's words: the flag and the
// value written (or its config key), not the optimizer or schedule that would refuse it
// later in its own terms ("AdamW: group 0 has beta1 1.5 ...", "LrSchedule: ..."), and not a
// NaN or infinity that nothing downstream would refuse at all.
#include "train/trainer_options.h"

namespace sonata {

// Throws naming the first flag whose value is out of its range.
void check_optimizer_values(const TrainerOptions& options);

}  // namespace sonata
