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
  std::mutex failure_mutex;
  auto run = [&] {
    for (int64_t i = next++; i < count; i = next++) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
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
