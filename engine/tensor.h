#pragma once
// Tensor: a handle (shared, like torch.Tensor) on a strided view of a Storage, with the
// autograd metadata that the graph needs. Copying a Tensor copies the handle, not the data.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "engine/device.h"
#include "engine/storage.h"

namespace sonata {

using Shape = std::vector<int64_t>;
class Node;
class Tensor;

std::string shape_str(const Shape& shape);
int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);

struct TensorOptions {
  DType dtype = DType::f32;
  Device device = Device::cpu();
  bool requires_grad = false;
  bool pinned = false;  // page-locked host memory (CPU tensors, CUDA builds)

  TensorOptions with(DType d) const {
    auto o = *this;
    o.dtype = d;
    return o;
  }
  TensorOptions with(Device d) const {
    auto o = *this;
    o.device = d;
    return o;
  }
  TensorOptions grad(bool r = true) const {
    auto o = *this;
    o.requires_grad = r;
    return o;
  }
};

// Called once a leaf's gradient for the running backward is complete, in the order leaves
// finish; the data-parallel reducer listens here.
using GradReadyHook = std::function<void(Tensor& leaf)>;

struct AutogradMeta {
  bool requires_grad = false;
  std::shared_ptr<Tensor> grad;
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;  // leaves: one per leaf, shared by every use
  std::vector<GradReadyHook> grad_ready_hooks;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;  // in elements
  int64_t offset = 0;
  DType dtype = DType::f32;
  AutogradMeta autograd;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  const Shape& strides() const { return impl().strides; }
  int64_t offset() const { return impl().offset; }
  int64_t dim() const { return int64_t(impl().shape.size()); }
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t numel() const { return shape_numel(impl().shape); }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  TensorOptions options() const { return {dtype(), device(), false, false}; }
  bool is_contiguous() const;
  bool is_pinned() const { return impl().storage->pinned(); }
  const std::shared_ptr<Storage>& storage() const { return impl().storage; }
  // Work on `stream` (a cudaStream_t) other than the current stream the memory was allocated
  // on uses this tensor: its memory is not reused before that work ends (Storage::record_stream,
  // PyTorch's Tensor.record_stream).
  void record_stream(StreamHandle stream) const { impl().storage->record_stream(stream); }

  void* data_ptr() const;
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_ptr());
  }

  // Views: share storage, no copy. Each is differentiable.
  Tensor view(const Shape& shape) const;     // requires compatible strides; -1 infers one size
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const { return transpose(0, 1); }
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;  // slice of one, dim removed
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(const Shape& shape) const;  // -1 keeps a size
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor contiguous() const;

  // Copies to another device or dtype (differentiable). Host->device copies run on the
  // current stream; from pinned memory with non_blocking the host does not wait, and small
  // pageable sources go through a pinned block of the engine's so that it does not wait
  // either. A copy to the host waits unless non_blocking and the destination is pinned.
  // Between two GPUs the copy is ordered after the source's current stream and before the
  // target's, as PyTorch's copy_.
  Tensor to(Device device, bool non_blocking = false) const;
  Tensor to(DType dtype) const;
  Tensor clone() const;
  double item() const;  // one element, as double (waits for the device)
  // Host copy of the elements in row-major order, converted to T (f32, f64, i64...).
  template <typename T>
  std::vector<T> to_vector() const;

  // In-place, not recorded by autograd: an error on tensors that require grad while
  // gradients are being recorded.
  Tensor& copy_(const Tensor& source);
  Tensor& fill_(double value);
  Tensor& zero_() { return fill_(0); }
  Tensor& add_(const Tensor& other, double alpha = 1.0);
  Tensor& mul_(double factor);

  // Autograd.
  bool requires_grad() const { return defined() && impl().autograd.requires_grad; }
  Tensor& set_requires_grad(bool requires_grad);
  bool is_leaf() const { return !impl().autograd.grad_fn; }
  const std::shared_ptr<Node>& grad_fn() const { return impl().autograd.grad_fn; }
  Tensor grad() const;
  void set_grad(const Tensor& grad);
  // Backward from this tensor: from a one-element tensor (gradient 1) or with `gradient`.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  Tensor detach() const;  // same data, no history
  void register_grad_ready_hook(GradReadyHook hook);
  // Points this tensor at `source`'s data, shape and dtype, keeping its identity and
  // autograd flags (Module::to, loading weights): every copy of the handle sees the change.
  // The gradient is dropped if it no longer matches.
  void set_data(const Tensor& source);

  std::string to_string() const;  // shape, dtype, device and (abridged) values
  TensorImpl& impl() const;
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

// Creation.
Tensor empty(const Shape& shape, const TensorOptions& options = {});
Tensor zeros(const Shape& shape, const TensorOptions& options = {});
Tensor ones(const Shape& shape, const TensorOptions& options = {});
Tensor full(const Shape& shape, double value, const TensorOptions& options = {});
Tensor arange(double start, double end, double step = 1.0, const TensorOptions& options = {});
Tensor empty_like(const Tensor& like);
Tensor zeros_like(const Tensor& like);
Tensor ones_like(const Tensor& like);
// Copies shape's worth of `dtype` elements from host memory, then converts to `options`.
Tensor from_host(const void* data, const Shape& shape, DType dtype,
                 const TensorOptions& options = {});
Tensor from_vector(const std::vector<float>& values, const Shape& shape,
                   const TensorOptions& options = {});
Tensor from_vector(const std::vector<double>& values, const Shape& shape,
                   const TensorOptions& options = {});
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape,
                   Device device = Device::cpu());  // i64, for indices
// A tensor over the caller's memory; the caller keeps it alive.
Tensor from_blob(void* data, const Shape& shape, DType dtype, Device device = Device::cpu());

}  // namespace sonata
