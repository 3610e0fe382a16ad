#pragma once
// Runs body(i) for i in [0, count) on `workers` threads (the caller's among them), items
// handed out one at a time so uneven items (long clips) balance. After a body throws, no new
// item starts; once every thread has stopped, the exception of the lowest failing index is
// rethrown (the same one whatever the timing: every lower index had already started).
#include <cstdint>
#include <functional>

namespace sonata {

void parallel_for(int64_t count, int64_t workers, const std::function<void(int64_t)>& body);

}  // namespace sonata
