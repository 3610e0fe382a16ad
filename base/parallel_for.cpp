#include "base/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace sonata {

void parallel_for(int64_t count, int64_t workers, const std::function<void(int64_t)>& body) {
  std::atomic<int64_t> next{0};
  std::exception_ptr failure;
  int64_t failed_index = count;
  std::mutex failure_mutex;
  auto run = [&] {
    for (int64_t i = next++; i < count; i = next++) {
      try {
        body(i);
      } catch (...) {
        // Every lower index was handed out before this one and still finishes, so keeping
        // the lowest failing index reports the first bad item whatever the timing.
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (i < failed_index) {
          failure = std::current_exception();
          failed_index = i;
        }
        next = count;  // the others stop after their current item
      }
    }
  };
  std::vector<std::thread> threads;
  const int64_t extra = std::min(workers, count) - 1;
  for (int64_t t = 0; t < extra; ++t) threads.emplace_back(run);
  run();
  for (std::thread& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace sonata
