#pragma once
// --range-times: where a run's host time went, by NVTX range (base/nvtx.h's host timer).
#include <string>

namespace sonata {

// One JSON line per range, the largest self time first: {"name", "calls", "inclusive_s",
// "self_s", "self_share"} with self_share = self_s / wall_s; a first line
// {"event": "range_times", "wall_s", "timed_s"} says how much of the run the ranges cover.
void write_range_times(const std::string& path, double wall_s);

}  // namespace sonata
