#pragma once
// Runs body(i) for i in [0, count) on `workers` threads (the caller's among them), items
// handed out one at a time so uneven items (long clips) balance. The first exception thrown
// by any body is rethrown once every thread has stopped.
#include <cstdint>
#include <functional>

namespace sonata {

void parallel_for(int64_t count, int64_t workers, const std::function<void(int64_t)>& body);

}  // namespace sonata
