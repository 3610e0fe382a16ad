#include "data/loader/device_stager.h"

#include <utility>

#include "base/error.h"
#include "base/nvtx.h"
#include "engine/device_guard.h"

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>

#include "base/cuda_check.h"
#include "engine/cuda/stream.h"
#endif

namespace sonata {

void pin_batch(HostBatch& batch) {
  if (!cuda_available()) return;
  SONATA_NVTX_RANGE("sonata::loader::pin_batch");
  for (BatchField& field : batch.fields) {
    Tensor& tensor = field.tensor;
    if (!tensor.device().is_cpu() || tensor.is_pinned() || tensor.numel() == 0) continue;
    TensorOptions pinned = tensor.options();
    pinned.pinned = true;
    Tensor copy = empty(tensor.shape(), pinned);
    copy.copy_(tensor);
    tensor = copy;
  }
}

#if SONATA_WITH_CUDA
struct DeviceStager::CopyState {
  explicit CopyState(int device) : stream(device) {}
  Stream stream;
  Event copied;
};
#else
struct DeviceStager::CopyState {};
#endif

DeviceStager::DeviceStager(Device device) : device_(device) {
#if SONATA_WITH_CUDA
  if (device_.is_cuda()) {
    const CudaDeviceGuard on_device(device_);  // the events belong to the stager's device
    copies_ = std::make_unique<CopyState>(device_.index);
  }
#else
  SONATA_CHECK(!device_.is_cuda(), "DeviceStager: ", cuda_unavailable_reason());
#endif
}

DeviceStager::~DeviceStager() {
  // The staged batch goes first, while the copy stream its tensors were recorded on exists.
  clear();
}

void DeviceStager::stage(HostBatch batch) {
  SONATA_CHECK(!pending_, "DeviceStager: stage() with a batch already staged; take() it first");
#if SONATA_WITH_CUDA
  if (device_.is_cuda()) {
    SONATA_NVTX_RANGE("sonata::loader::stage");
    cudaStream_t compute = current_stream(device_.index);
    cudaStream_t copy = copies_->stream.get();
    std::vector<Tensor*> sources;
    for (BatchField& field : batch.fields)
      if (field.staged) sources.push_back(&field.tensor);
    std::vector<Tensor> destinations;
    // Allocated on the compute stream, which frees them after the step; the copy stream
    // waits for the allocation. Recorded on the copy stream, so that a batch dropped before
    // its copy ends (clear() at an epoch start, the destructor) is not freed under the copy.
    for (const Tensor* source : sources) {
      destinations.push_back(empty(source->shape(), source->options().with(device_)));
      destinations.back().record_stream(copy);
    }
    Event allocated;
    allocated.record(compute);
    allocated.block(copy);
    for (size_t k = 0; k < sources.size(); ++k) {
      Tensor& source = *sources[k];
      if (!source.is_contiguous()) source = source.contiguous();
      const size_t nbytes = size_t(source.numel()) * dtype_size(source.dtype());
      if (nbytes > 0) {
        CUDA_CHECK(cudaMemcpyAsync(destinations[k].data_ptr(), source.data_ptr(), nbytes,
                                   cudaMemcpyHostToDevice, copy));
        if (source.is_pinned()) source.record_stream(copy);
      }
      source = destinations[k];
    }
    copies_->copied.record(copy);
  }
#endif
  pending_ = std::move(batch);
}

HostBatch DeviceStager::take() {
  SONATA_CHECK(pending_, "DeviceStager: take() with nothing staged");
#if SONATA_WITH_CUDA
  if (device_.is_cuda()) copies_->copied.block(current_stream(device_.index));
#endif
  HostBatch batch = std::move(*pending_);
  pending_.reset();
  return batch;
}

void DeviceStager::clear() {
  pending_.reset();
}

}  // namespace sonata
