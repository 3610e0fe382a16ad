#pragma once
// Host-to-device staging of the loader's batches, one batch ahead of the step (PyTorch's
// pin_memory + non_blocking copies, with the copy on a stream of its own):
//
//   DeviceStager stager(device);         // the batch's staged fields go to the device
//   stager.stage(*loader.next());        // copy of batch 0 starts
//   while (stager.staged()) {
//     HostBatch batch = stager.take();   // batch i, its staged fields on the device
//     if (auto next = loader.next()) stager.stage(std::move(*next));  // i + 1 copies ...
//     step(batch);                       // ... while step i computes
//   }
//
// On CUDA the staged fields should already be in page-locked memory (pin_batch, which the
// loader's workers run when asked): the copy engine then reads them without the driver's
// pageable staging, on the stager's copy stream, while the compute stream runs the previous
// step. take() makes the caller's current stream wait for the copy (an event; the host never
// waits). The device memory is allocated on the compute stream, the copy stream is ordered
// after that allocation, and the copy stream is recorded on it (Tensor::record_stream): its
// free, after the step or when a staged batch is dropped, waits for the copy. Pinned blocks
// go back to the engine's PinnedPool when the host batch is dropped, and are reused for later
// batches once their copy has finished.
//
// On the CPU both calls just hand the batch through.
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "data/loader/batch_loader.h"
#include "engine/device.h"

namespace sonata {

// `batch`'s CPU tensors copied into page-locked memory (a no-op without a usable GPU).
void pin_batch(HostBatch& batch);

class DeviceStager {
 public:
  // Moves each batch's staged fields (BatchField::staged) to `device`.
  explicit DeviceStager(Device device);
  ~DeviceStager();
  DeviceStager(const DeviceStager&) = delete;
  DeviceStager& operator=(const DeviceStager&) = delete;

  // Starts the copies of `batch` (one batch may be staged at a time).
  void stage(HostBatch batch);
  bool staged() const { return pending_.has_value(); }
  // The staged batch, its staged fields on the device and ready for the current stream.
  HostBatch take();
  // Drops a staged batch (a new epoch, a restart).
  void clear();

 private:
  struct CopyState;  // the copy stream and events (CUDA builds)

  Device device_;
  std::unique_ptr<CopyState> copies_;  // before pending_: outlives the batch recorded on it
  std::optional<HostBatch> pending_;
};

}  // namespace sonata
