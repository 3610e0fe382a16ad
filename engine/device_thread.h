#pragma once
// Every thread the project starts that can touch CUDA starts here. A new thread has no
// device selected, and its first CUDA call (an event query, dropping the last reference to an
// event or a tensor) opens a context on GPU 0: under `mpirun -np 8` every rank's watchdog or
// loader worker would then hold ~0.5 GiB on GPU 0, and on GPUs in exclusive-process mode the
// call fails. torchcomms fixed the same watchdog bug by selecting the device first in the
// thread; this does it for every thread. tests/core/test_thread_starts.cpp fails for a file
// that starts a std::thread anywhere else, so a thread without its device cannot be added
// unnoticed.
#include <exception>
#include <functional>
#include <thread>

#include "engine/device.h"

namespace sonata {

// Starts a thread that enters a CudaDeviceGuard for `device` (a CPU device selects nothing)
// and then runs `body`. `body` always runs, with the selection's exception (null when the
// device was selected): the thread reports it where its results go (the loader to the
// consumer, the watchdog through its expire) instead of dying with it.
std::thread start_device_thread(Device device, std::function<void(std::exception_ptr)> body);

}  // namespace sonata
