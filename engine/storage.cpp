#include "engine/storage.h"

#include "base/error.h"
#include "engine/allocator.h"
#include "engine/deferred_init.h"

#if SONATA_WITH_CUDA
#include "engine/cuda/cuda_allocator.h"
#include "engine/cuda/pinned_pool.h"
#endif

namespace sonata {

Storage::Storage(void* data, size_t nbytes, Device device, Deleter deleter, bool pinned)
    : data_(data),
      nbytes_(nbytes),
      device_(device),
      deleter_(std::move(deleter)),
      pinned_(pinned) {}

Storage::~Storage() {
  if (deleter_) deleter_(data_);
}

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device, bool pinned) {
  if (device.is_cpu()) {
#if SONATA_WITH_CUDA
    if (pinned && cuda_available()) {
      void* data = PinnedPool::instance().allocate(nbytes);
      return std::make_shared<Storage>(
          data, nbytes, device, [](void* p) { PinnedPool::instance().release(p); }, true);
    }
#endif
    return std::make_shared<Storage>(cpu_allocate(nbytes), nbytes, device,
                                     [nbytes](void* p) { cpu_free(p, nbytes); });
  }
#if SONATA_WITH_CUDA
  const CudaBlock block = cuda_allocate(nbytes, device.index);
  auto uses = std::make_shared<StreamUses>(block.stream);
  auto storage = std::make_shared<Storage>(block.data, nbytes, device,
                                           [block, uses](void*) { cuda_free(block, *uses); });
  storage->stream_uses_ = std::move(uses);
  return storage;
#else
  throw Error(str("cannot allocate on ", device.str(), ": ", cuda_unavailable_reason()));
#endif
}

std::shared_ptr<Storage> Storage::deferred(Device device, std::shared_ptr<DeferredInit> recipe) {
  auto storage = std::make_shared<Storage>(nullptr, 0, device, Deleter());
  storage->deferred_init_ = std::move(recipe);
  return storage;
}

void Storage::record_stream(StreamHandle stream) {
  if (stream_uses_) {
    stream_uses_->record(stream);
    return;
  }
#if SONATA_WITH_CUDA
  if (pinned_) PinnedPool::instance().record_use(data_, static_cast<cudaStream_t>(stream));
#else
  (void)stream;
#endif
}

}  // namespace sonata
