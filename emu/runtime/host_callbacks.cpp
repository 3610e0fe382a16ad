#include "emu/runtime/host_callbacks.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace sonata::emu {

namespace {

struct CallbackThread {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::shared_ptr<HostCall>> queue;

  CallbackThread() {
    // Detached and never joined: it sleeps on the queue at exit, as the driver's does.
    std::thread([this] { loop(); }).detach();
  }

  void loop() {
    for (;;) {
      std::shared_ptr<HostCall> call;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [this] { return !queue.empty(); });
        call = std::move(queue.front());
        queue.pop_front();
      }
      try {
        call->run();
      } catch (const std::exception& failure) {
        call->failure = failure.what();
      } catch (...) {
        call->failure = "an exception that is not a std::exception";
      }
      call->run = nullptr;
      call->finished.store(true, std::memory_order_release);
    }
  }
};

}  // namespace

void dispatch_host_call(std::shared_ptr<HostCall> call) {
  static auto* thread = new CallbackThread;
  {
    std::lock_guard<std::mutex> lock(thread->mutex);
    thread->queue.push_back(std::move(call));
  }
  thread->wake.notify_one();
}

}  // namespace sonata::emu
