#pragma once
// Which CUDA device the calling thread works on.
#include "engine/device.h"

namespace sonata {

// The calling thread's CUDA device. A thread starts without one, and its first CUDA call
// would then open a context on GPU 0 (half a gigabyte on every rank's GPU 0 under mpirun, a
// failure on GPUs in exclusive-process mode): every thread that touches CUDA (loader workers,
// callbacks, the main thread) selects the rank's device first, through set_cuda_device or a
// CudaDeviceGuard. -1 until one of them ran on this thread.
int current_cuda_device();
// Makes `index` the calling thread's CUDA device, unless it already is.
void set_cuda_device(int index);

// Makes a CUDA device the thread's device until the guard ends, then restores the previous
// one (PyTorch's CUDAGuard). A CPU device changes nothing.
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(Device device);
  ~CudaDeviceGuard();
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  bool active_ = false;
  int previous_ = -1;
};

// The call that selects a device: cudaSetDevice in CUDA builds, an error naming the device in
// CPU builds. Tests replace it to observe which thread selects what. Returns the replaced one.
using SelectCudaDevice = void (*)(int index);
SelectCudaDevice replace_select_cuda_device(SelectCudaDevice select);

}  // namespace sonata
