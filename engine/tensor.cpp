#include "engine/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <ostream>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"
#include "engine/autograd/record.h"
#include "engine/deferred_init.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "engine/ops/op_utils.h"

#if SONATA_WITH_CUDA
#include "base/cuda_check.h"
#include "engine/cuda/stream.h"
#endif

namespace sonata {

std::string shape_str(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

int64_t shape_numel(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>());
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

namespace {

Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(impl);
}

// Strides for viewing `t` as `shape` without a copy, or empty when impossible (PyTorch's
// computeStride: each run of merged dims must be contiguous within itself).
std::optional<Shape> view_strides(const Tensor& t, const Shape& shape) {
  if (t.numel() == 0 || t.is_contiguous()) return contiguous_strides(shape);
  const Shape& old_shape = t.shape();
  const Shape& old_strides = t.strides();
  Shape strides(shape.size());
  int64_t view_d = int64_t(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    if (d == 0 ||
        (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

Shape infer_shape(const Shape& requested, int64_t numel, std::string_view op) {
  Shape shape = requested;
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0)
        throw Error(str(op, ": only one size may be -1 in ", shape_str(requested)));
      infer_at = int64_t(i);
    } else {
      known *= shape[i];
    }
  }
  if (infer_at >= 0 && known != 0 && numel % known == 0) shape[infer_at] = numel / known;
  if (shape_numel(shape) != numel || (infer_at >= 0 && known == 0))
    throw Error(str(op, ": shape ", shape_str(requested), " is invalid for ", numel, " elements"));
  return shape;
}

void check_inplace(const Tensor& t, std::string_view op) {
  if (GradMode::enabled() && t.requires_grad())
    throw Error(str(op,
                    ": in-place change of a tensor that requires grad while gradients are "
                    "recorded; wrap it in NoGradGuard or detach() it"));
}

}  // namespace

TensorImpl& Tensor::impl() const {
  SONATA_CHECK(impl_, "use of an undefined tensor");
  return *impl_;
}

int64_t Tensor::size(int64_t d) const {
  return shape()[wrap_dim(d, dim(), "size")];
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape().size(); i-- > 0;) {
    if (shape()[i] != 1 && strides()[i] != expected) return false;
    expected *= shape()[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  if (impl().storage->deferred_init()) throw_deferred_access(*this);
  return static_cast<char*>(impl().storage->data()) + offset() * int64_t(dtype_size(dtype()));
}

Tensor Tensor::view(const Shape& requested) const {
  const Shape shape_out = infer_shape(requested, numel(), "view");
  auto strides_out = view_strides(*this, shape_out);
  if (!strides_out)
    throw Error(str("view: cannot view a tensor of shape ", shape_str(shape()), " and strides ",
                    shape_str(strides()), " as ", shape_str(shape_out),
                    "; use reshape() (it copies)"));
  Tensor out = make_view(*this, shape_out, *strides_out, offset());
  const Shape in_shape = shape();
  record("ViewBackward", {*this}, {&out}, [in_shape](const std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0].reshape(in_shape)};
  });
  return out;
}

Tensor Tensor::reshape(const Shape& requested) const {
  const Shape shape_out = infer_shape(requested, numel(), "reshape");
  if (view_strides(*this, shape_out)) return view(shape_out);
  return contiguous().view(shape_out);
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  SONATA_CHECK(int64_t(order.size()) == dim(), "permute: got ", order.size(),
               " dims for a tensor of ", dim());
  Shape shape_out(order.size()), strides_out(order.size());
  std::vector<int64_t> inverse(order.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t d = wrap_dim(order[i], dim(), "permute");
    if (inverse[d] != -1) throw Error("permute: a dim appears twice in the order");
    inverse[d] = int64_t(i);
    shape_out[i] = shape()[d];
    strides_out[i] = strides()[d];
  }
  Tensor out = make_view(*this, shape_out, strides_out, offset());
  record("PermuteBackward", {*this}, {&out}, [inverse](const std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0].permute(inverse)};
  });
  return out;
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  std::vector<int64_t> order(static_cast<size_t>(dim()));
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[wrap_dim(dim0, dim(), "transpose")], order[wrap_dim(dim1, dim(), "transpose")]);
  return permute(order);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = wrap_dim(d, dim(), "slice");
  SONATA_CHECK(step > 0, "slice: step must be positive, got ", step);
  const int64_t n = shape()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape shape_out = shape(), strides_out = strides();
  shape_out[d] = (end - start + step - 1) / step;
  strides_out[d] *= step;
  Tensor out = make_view(*this, shape_out, strides_out, offset() + start * strides()[d]);
  const Shape in_shape = shape();
  record("SliceBackward", {*this}, {&out}, [=](const std::vector<Tensor>& g) {
    Tensor grad = zeros(in_shape, g[0].options());
    grad.slice(d, start, end, step).copy_(g[0]);
    return std::vector<Tensor>{grad};
  });
  return out;
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = wrap_dim(d, dim(), "select");
  const int64_t n = shape()[d];
  if (index < -n || index >= n)
    throw Error(str("select: index ", index, " is out of range for dim ", d, " of size ", n));
  if (index < 0) index += n;
  return slice(d, index, index + 1).squeeze(d);
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim(), "squeeze");
  if (shape()[d] != 1) return *this;
  Shape shape_out = shape();
  shape_out.erase(shape_out.begin() + d);
  return view(shape_out);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape shape_out = shape();
  shape_out.insert(shape_out.begin() + d, 1);
  return view(shape_out);
}

Tensor Tensor::expand(const Shape& requested) const {
  SONATA_CHECK(requested.size() >= shape().size(), "expand: cannot expand ", shape_str(shape()),
               " to fewer dims ", shape_str(requested));
  const size_t lead = requested.size() - shape().size();
  Shape shape_out(requested.size()), strides_out(requested.size(), 0);
  for (size_t i = 0; i < requested.size(); ++i) {
    if (i < lead) {
      SONATA_CHECK(requested[i] >= 0, "expand: size -1 is not allowed for a new leading dim");
      shape_out[i] = requested[i];
      continue;
    }
    const int64_t have = shape()[i - lead];
    const int64_t want = requested[i] == -1 ? have : requested[i];
    if (have != want && have != 1)
      throw Error(str("expand: cannot expand ", shape_str(shape()), " to ", shape_str(requested)));
    shape_out[i] = want;
    strides_out[i] = have == want ? strides()[i - lead] : 0;
  }
  Tensor out = make_view(*this, shape_out, strides_out, offset());
  const Shape in_shape = shape();
  record("ExpandBackward", {*this}, {&out}, [in_shape](const std::vector<Tensor>& g) {
    return std::vector<Tensor>{sum_to(g[0], in_shape)};
  });
  return out;
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, dim(), "flatten");
  end_dim = wrap_dim(end_dim, dim(), "flatten");
  Shape shape_out(shape().begin(), shape().begin() + start_dim);
  int64_t merged = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) merged *= shape()[d];
  shape_out.push_back(merged);
  shape_out.insert(shape_out.end(), shape().begin() + end_dim + 1, shape().end());
  return reshape(shape_out);
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), options());
  {
    NoGradGuard no_grad;
    out.copy_(*this);
  }
  record("CloneBackward", {*this}, {&out},
         [](const std::vector<Tensor>& g) { return std::vector<Tensor>{g[0]}; });
  return out;
}

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return *this;
  if (is_deferred(*this)) return deferred_moved(*this, device(), target);
  return cast(*this, target);
}

namespace {
#if SONATA_WITH_CUDA
// Pageable sources up to this size (the step's lengths, targets and masks) are staged through
// the pinned pool: from pageable memory the driver stages the copy itself and may first wait
// for everything queued on the stream, stalling the host behind the device. Larger ones
// (weights, moved once) go directly, so that the pool does not keep a pinned copy of them.
constexpr size_t kPinnedStagingMaxBytes = size_t(1) << 20;

void copy_host_to_device(const Tensor& source, const Tensor& out, size_t nbytes,
                         bool non_blocking) {
  cudaStream_t stream = current_stream(out.device().index);
  Tensor staged = source;
  if (!source.is_pinned() && nbytes <= kPinnedStagingMaxBytes) {
    TensorOptions pinned = source.options();
    pinned.pinned = true;
    staged = empty(source.shape(), pinned);
    std::memcpy(staged.data_ptr(), source.data_ptr(), nbytes);
  }
  CUDA_CHECK(
      cudaMemcpyAsync(out.data_ptr(), staged.data_ptr(), nbytes, cudaMemcpyHostToDevice, stream));
  if (staged.is_pinned()) staged.record_stream(stream);
  // The caller may overwrite its pinned memory after a blocking copy; our staging block and
  // pageable memory (staged by the driver before it returns) need no wait.
  if (source.is_pinned() && !non_blocking) CUDA_CHECK(cudaStreamSynchronize(stream));
}

// As PyTorch's copy_ between GPUs: the copy runs on the source's stream, after the work that
// wrote the source and after the target's stream has reached the target's allocation, and
// the target's stream waits for it. Each tensor is then used only on its own stream, so
// neither stream-ordered free can overtake the copy.
void copy_between_devices(const Tensor& source, const Tensor& out, size_t nbytes) {
  const int from = source.device().index, to = out.device().index;
  cudaStream_t to_stream = current_stream(to);
  Event target_ready;  // created on `to`, the thread's device since current_stream(to)
  target_ready.record(to_stream);
  cudaStream_t from_stream = current_stream(from);
  target_ready.block(from_stream);
  CUDA_CHECK(cudaMemcpyPeerAsync(out.data_ptr(), to, source.data_ptr(), from, nbytes, from_stream));
  {
    Event copied;  // created, and destroyed, on `from`
    copied.record(from_stream);
    copied.block(to_stream);
  }
  set_cuda_device(to);  // the thread ends on the target, as after any other copy to it
}
#endif

}  // namespace

Tensor Tensor::to(Device target, bool non_blocking) const {
  if (target == device()) return *this;
  if (is_deferred(*this)) return deferred_moved(*this, target, dtype());
  const Tensor source = contiguous();
  TensorOptions opts = options().with(target);
  opts.pinned = target.is_cpu() && non_blocking && cuda_available();
  Tensor out = empty(shape(), opts);
  const size_t nbytes = size_t(numel()) * dtype_size(dtype());
#if SONATA_WITH_CUDA
  if (nbytes > 0) {
    if (target.is_cuda() && source.device().is_cuda()) {
      copy_between_devices(source, out, nbytes);
    } else if (target.is_cuda()) {
      copy_host_to_device(source, out, nbytes, non_blocking);
    } else {
      cudaStream_t stream = current_stream(source.device().index);
      CUDA_CHECK(cudaMemcpyAsync(out.data_ptr(), source.data_ptr(), nbytes, cudaMemcpyDeviceToHost,
                                 stream));
      if (out.is_pinned()) out.record_stream(stream);
      // The host may read the result next: wait unless the caller asked not to.
      if (!(non_blocking && out.is_pinned())) CUDA_CHECK(cudaStreamSynchronize(stream));
    }
  }
#else
  (void)nbytes;
  throw Error(str("to(", target.str(), "): ", cuda_unavailable_reason()));
#endif
  const Device source_device = device();
  record("ToDeviceBackward", {*this}, {&out}, [source_device](const std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0].to(source_device)};
  });
  return out;
}

double Tensor::item() const {
  SONATA_CHECK(numel() == 1, "item: the tensor has ", numel(), " elements, not one");
  return to_vector<double>()[0];
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = detach().to(Device::cpu());
  DType want = DType::f64;
  if constexpr (std::is_same_v<T, float>) want = DType::f32;
  if constexpr (std::is_same_v<T, int64_t>) want = DType::i64;
  if constexpr (std::is_same_v<T, int32_t>) want = DType::i32;
  if constexpr (std::is_same_v<T, uint8_t>) want = DType::u8;
  Tensor typed = empty(shape(), TensorOptions{}.with(want));
  typed.copy_(host);
  std::vector<T> values(static_cast<size_t>(numel()));
  if (!values.empty()) std::memcpy(values.data(), typed.data_ptr(), values.size() * sizeof(T));
  return values;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;

Tensor& Tensor::copy_(const Tensor& source) {
  check_inplace(*this, "copy_");
  const Shape target = shape();
  SONATA_CHECK(source.defined(), "copy_: the source is undefined");
  broadcast_shapes(source.shape(), target, "copy_");  // validates
  if (source.device() != device()) {
    Tensor moved = source.detach().to(device());
    return copy_(moved);
  }
  if (numel() == 0) return *this;
  const kernels::StridedLayout layout =
      make_layout(target, {strides(), broadcast_strides(source, target)});
  SONATA_BACKEND(device(), copy, dtype(), source.dtype(), layout, source.data_ptr(), data_ptr());
  return *this;
}

Tensor& Tensor::fill_(double value) {
  check_inplace(*this, "fill_");
  if (is_deferred(*this)) {
    defer_constant(*this, value);
  } else if (is_contiguous()) {
    SONATA_BACKEND(device(), fill, dtype(), data_ptr(), numel(), value);
  } else {
    copy_(full({}, value, options()));
  }
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  check_inplace(*this, "add_");
  NoGradGuard no_grad;
  Tensor scaled = alpha == 1.0 ? other : mul(other, alpha);
  if (scaled.dtype() != dtype()) scaled = scaled.to(dtype());
  if (scaled.device() != device()) scaled = scaled.to(device());
  // In place when it is safe to write each element right after reading it: this tensor is
  // contiguous and the other operand does not view the same memory.
  if (is_contiguous() && scaled.storage() != storage() && numel() > 0) {
    broadcast_shapes(scaled.shape(), shape(), "add_");
    const kernels::StridedLayout layout =
        make_layout(shape(), {strides(), broadcast_strides(scaled, shape())});
    SONATA_BACKEND(device(), binary, kernels::BinaryOp::add, dtype(), layout, data_ptr(),
                   scaled.data_ptr(), data_ptr());
    return *this;
  }
  return copy_(add(*this, scaled));
}

Tensor& Tensor::mul_(double factor) {
  check_inplace(*this, "mul_");
  NoGradGuard no_grad;
  if (is_contiguous() && is_floating(dtype())) {
    if (numel() > 0)
      SONATA_BACKEND(device(), unary, kernels::UnaryOp::affine, dtype(), data_ptr(), data_ptr(),
                     numel(), factor, 0.0);
    return *this;
  }
  return copy_(mul(*this, factor));
}

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  SONATA_CHECK(is_leaf(), "set_requires_grad: only leaf tensors can change requires_grad");
  SONATA_CHECK(!requires_grad || is_floating(dtype()),
               "set_requires_grad: only floating-point tensors can require grad, not ",
               dtype_name(dtype()));
  impl().autograd.requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const {
  const auto& grad = impl().autograd.grad;
  return grad ? *grad : Tensor();
}

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined())
    SONATA_CHECK(grad.shape() == shape() && grad.dtype() == dtype() && grad.device() == device(),
                 "set_grad: the gradient must match the tensor's shape, dtype and device");
  impl().autograd.grad = grad.defined() ? std::make_shared<Tensor>(grad) : nullptr;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  Tensor seed = gradient;
  if (!seed.defined()) {
    SONATA_CHECK(numel() == 1, "backward: a gradient is needed for a tensor of ", numel(),
                 " elements (implicit 1 only for one-element tensors)");
    seed = ones(shape(), options());
  }
  SONATA_CHECK(seed.shape() == shape(), "backward: gradient shape ", shape_str(seed.shape()),
               " differs from the tensor's ", shape_str(shape()));
  run_backward({*this}, {seed.to(dtype())}, retain_graph);
}

Tensor Tensor::detach() const {
  auto impl_copy = std::make_shared<TensorImpl>();
  impl_copy->storage = storage();
  impl_copy->shape = shape();
  impl_copy->strides = strides();
  impl_copy->offset = offset();
  impl_copy->dtype = dtype();
  return Tensor(impl_copy);
}

void Tensor::set_data(const Tensor& source) {
  SONATA_CHECK(source.defined(), "set_data: the source is undefined");
  SONATA_CHECK(!requires_grad() || is_floating(source.dtype()),
               "set_data: a tensor that requires grad needs floating-point data, not ",
               dtype_name(source.dtype()));
  TensorImpl& self = impl();
  self.storage = source.storage();
  self.shape = source.shape();
  self.strides = source.strides();
  self.offset = source.offset();
  self.dtype = source.dtype();
  const auto& grad = self.autograd.grad;
  if (grad && (grad->shape() != shape() || grad->dtype() != dtype() || grad->device() != device()))
    self.autograd.grad = nullptr;
}

void Tensor::register_grad_ready_hook(GradReadyHook hook) {
  SONATA_CHECK(is_leaf() && requires_grad(),
               "register_grad_ready_hook: only leaves that require grad have grad-ready hooks");
  impl().autograd.grad_ready_hooks.push_back(std::move(hook));
}

// ---- creation ----

Tensor empty(const Shape& shape, const TensorOptions& options) {
  for (int64_t s : shape) SONATA_CHECK(s >= 0, "empty: negative size in shape ", shape_str(shape));
  if (deferred_init_enabled() && !options.pinned) return deferred_empty(shape, options);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate(size_t(shape_numel(shape)) * dtype_size(options.dtype),
                                    options.device, options.pinned);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = options.dtype;
  Tensor t(impl);
  if (options.requires_grad) t.set_requires_grad(true);
  return t;
}

Tensor full(const Shape& shape, double value, const TensorOptions& options) {
  TensorOptions plain = options;
  plain.requires_grad = false;
  Tensor t = empty(shape, plain);
  if (is_deferred(t))
    defer_constant(t, value);
  else if (t.numel() > 0)
    SONATA_BACKEND(t.device(), fill, t.dtype(), t.data_ptr(), t.numel(), value);
  if (options.requires_grad) t.set_requires_grad(true);
  return t;
}

Tensor zeros(const Shape& shape, const TensorOptions& options) {
  return full(shape, 0, options);
}
Tensor ones(const Shape& shape, const TensorOptions& options) {
  return full(shape, 1, options);
}

Tensor arange(double start, double end, double step, const TensorOptions& options) {
  SONATA_CHECK(step != 0, "arange: step must not be zero");
  const double count = std::ceil((end - start) / step);
  Tensor t = empty({int64_t(std::max(count, 0.0))}, options);
  if (t.numel() > 0)
    SONATA_BACKEND(t.device(), arange, t.dtype(), t.data_ptr(), t.numel(), start, step);
  return t;
}

Tensor empty_like(const Tensor& like) {
  return empty(like.shape(), like.options());
}
Tensor zeros_like(const Tensor& like) {
  return zeros(like.shape(), like.options());
}
Tensor ones_like(const Tensor& like) {
  return ones(like.shape(), like.options());
}

Tensor from_blob(void* data, const Shape& shape, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(data, size_t(shape_numel(shape)) * dtype_size(dtype),
                                            device, nullptr);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(impl);
}

Tensor from_host(const void* data, const Shape& shape, DType dtype, const TensorOptions& options) {
  Tensor host = empty(shape, TensorOptions{}.with(dtype));
  std::memcpy(host.data_ptr(), data, size_t(host.numel()) * dtype_size(dtype));
  Tensor out = host;
  if (options.dtype != dtype) out = out.to(options.dtype);
  out = out.to(options.device);
  if (options.requires_grad) {
    out = out.detach();
    out.set_requires_grad(true);
  }
  return out;
}

Tensor from_vector(const std::vector<float>& values, const Shape& shape,
                   const TensorOptions& options) {
  SONATA_CHECK(int64_t(values.size()) == shape_numel(shape), "from_vector: ", values.size(),
               " values for shape ", shape_str(shape));
  return from_host(values.data(), shape, DType::f32, options);
}
Tensor from_vector(const std::vector<double>& values, const Shape& shape,
                   const TensorOptions& options) {
  SONATA_CHECK(int64_t(values.size()) == shape_numel(shape), "from_vector: ", values.size(),
               " values for shape ", shape_str(shape));
  return from_host(values.data(), shape, DType::f64, options);
}
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape, Device device) {
  SONATA_CHECK(int64_t(values.size()) == shape_numel(shape), "from_vector: ", values.size(),
               " values for shape ", shape_str(shape));
  return from_host(values.data(), shape, DType::i64, TensorOptions{}.with(DType::i64).with(device));
}

}  // namespace sonata
