#pragma once
// The thread that runs host functions (cudaLaunchHostFunc), as the driver's callback thread
// does on a card: a host function may block until the host thread moves on (a gate the host
// opens later), so it cannot run on the host thread that drives the scheduler. The
// scheduler hands it over and goes on; the stream stays held until it returns.
#include <atomic>
#include <functional>
#include <memory>
#include <string>

namespace sonata::emu {

struct HostCall {
  std::function<void()> run;
  std::atomic<bool> finished{false};
  std::string failure;  // what the function threw, if it did
};

// Queues `call` for the callback thread (one thread, first in first out).
void dispatch_host_call(std::shared_ptr<HostCall> call);

}  // namespace sonata::emu
