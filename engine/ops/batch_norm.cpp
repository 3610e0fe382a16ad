// Batch normalisation ops: validation, the per-channel statistics (batch or running), the
// kernels, and a backward that runs the per-channel reduction only when something needs it.
#include "engine/ops/batch_norm.h"

#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "engine/ops/memory_format.h"
#include "kernels/cpu/batch_norm.h"
#if SONATA_WITH_CUDA
#include "kernels/cuda/batch_norm.h"
#endif

namespace sonata {
namespace {

struct Layout {
  int64_t batch = 1, channels = 1, spatial = 1;
};

// What the kernels keep per channel: f64 beside f64 data, else f32.
DType statistics_dtype(DType x) {
  return x == DType::f64 ? DType::f64 : DType::f32;
}

void check_channel_vector(const char* op, const char* name, const Tensor& t, const Tensor& x) {
  if (!t.defined()) return;
  SONATA_CHECK(is_floating(t.dtype()), op, ": ", name, " must be floating-point, got ",
               dtype_name(t.dtype()));
  SONATA_CHECK(t.dim() == 1 && t.size(0) == x.size(1), op, ": ", name, " must have shape [",
               x.size(1), "] (one value per channel of x ", shape_str(x.shape()), "), got ",
               shape_str(t.shape()));
  SONATA_CHECK(t.device() == x.device(), op, ": ", name, " is on ", t.device().str(),
               " but x is on ", x.device().str());
}

Layout check_inputs(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias,
                    const Tensor& running_mean, const Tensor& running_var,
                    const BatchNormOptions& options) {
  SONATA_CHECK(x.defined(), op, ": x is undefined");
  SONATA_CHECK(is_floating(x.dtype()), op, ": x must be floating-point, got ",
               dtype_name(x.dtype()));
  SONATA_CHECK(x.dim() >= 2, op, ": x must have shape [N, C, *], got ", shape_str(x.shape()));
  check_channel_vector(op, "weight", weight, x);
  check_channel_vector(op, "bias", bias, x);
  check_channel_vector(op, "running_mean", running_mean, x);
  check_channel_vector(op, "running_var", running_var, x);
  SONATA_CHECK(running_mean.defined() == running_var.defined(), op,
               ": running_mean and running_var must be given together");
  SONATA_CHECK(options.training || running_mean.defined(), op,
               ": evaluation mode needs running_mean and running_var");
  SONATA_CHECK(!running_mean.requires_grad() && !running_var.requires_grad(), op,
               ": running_mean and running_var are buffers and must not require grad");
  SONATA_CHECK(std::isfinite(options.momentum) && options.eps >= 0, op, ": momentum ",
               options.momentum, " and eps ", options.eps, " must be finite and eps >= 0");
  Layout layout;
  layout.batch = x.size(0);
  layout.channels = x.size(1);
  for (int64_t d = 2; d < x.dim(); ++d) layout.spatial *= x.size(d);
  SONATA_CHECK(!options.training || layout.batch * layout.spatial > 1, op,
               ": training needs more than one value per channel, got x of shape ",
               shape_str(x.shape()));
  return layout;
}

// weight / bias in the statistics dtype, through differentiable ops.
Tensor as_statistics(const Tensor& t, DType dtype) {
  return t.defined() ? cast(t, dtype).contiguous() : Tensor();
}

// A private copy of a running statistic in the statistics dtype (it may change in place
// before the backward runs).
Tensor snapshot(const Tensor& t, DType dtype) {
  const Tensor converted = t.detach().to(dtype).contiguous();
  return converted.storage() == t.storage() ? converted.clone() : converted;
}

const void* pointer(const Tensor& t) {
  return t.defined() ? t.data_ptr() : nullptr;
}
void* mutable_pointer(const Tensor& t) {
  return t.defined() ? t.data_ptr() : nullptr;
}

// Batch mean and invstd; updates the running stats (through a statistics-dtype copy when
// they are stored otherwise).
std::pair<Tensor, Tensor> batch_statistics(const Tensor& in, const Layout& layout,
                                           const Tensor& running_mean, const Tensor& running_var,
                                           const BatchNormOptions& options) {
  const DType dtype = statistics_dtype(in.dtype());
  const TensorOptions stat_options = in.options().with(dtype);
  const Tensor mean = empty({layout.channels}, stat_options);
  const Tensor invstd = empty({layout.channels}, stat_options);
  // The kernel updates buffers in the statistics dtype in place; others go through a copy.
  auto work_copy = [&](const Tensor& running) {
    if (!running.defined()) return Tensor();
    if (running.dtype() == dtype && running.is_contiguous()) return running;
    return snapshot(running, dtype);
  };
  const Tensor mean_work = work_copy(running_mean), var_work = work_copy(running_var);
  const Tensor workspace = empty({SONATA_BACKEND(in.device(), batch_norm_workspace_size,
                                                 layout.batch, layout.channels, layout.spatial)},
                                 stat_options);
  if (layout.channels > 0)
    SONATA_BACKEND(in.device(), batch_norm_statistics, in.dtype(), in.data_ptr(), layout.batch,
                   layout.channels, layout.spatial, options.eps, options.momentum,
                   mutable_pointer(mean_work), mutable_pointer(var_work), mean.data_ptr(),
                   invstd.data_ptr(), mutable_pointer(workspace));
  NoGradGuard no_grad;
  for (auto [work, running] :
       {std::pair{mean_work, running_mean}, std::pair{var_work, running_var}})
    if (work.defined() && !work.same(running)) running.copy_(work);  // handle on the buffer
  return {mean, invstd};
}

struct SyncedStatistics {
  Tensor mean, invstd;
  Tensor count_ratio;  // [1]: this process's values per channel over every process's
};

// The batch statistics over every process: each one's mean, M2 (sum of squared deviations)
// and count, gathered and combined with Chan's formula, which never subtracts two large sums
// of squares. The running statistics get the unbiased variance over the whole batch.
SyncedStatistics synced_statistics(const Tensor& in, const Layout& layout,
                                   const Tensor& running_mean, const Tensor& running_var,
                                   const BatchNormOptions& options,
                                   BatchNormStatsReducer& reducer) {
  NoGradGuard no_grad;
  const DType dtype = statistics_dtype(in.dtype());
  const int64_t channels = layout.channels;
  std::vector<int64_t> dims;
  Shape per_channel(size_t(in.dim()), 1);
  per_channel[1] = channels;
  for (int64_t d = 0; d < in.dim(); ++d)
    if (d != 1) dims.push_back(d);
  const Tensor xs = cast(in, dtype);
  const Tensor local_mean = mean(xs, dims);
  const Tensor local_m2 = sum(pow(xs - local_mean.reshape(per_channel), 2.0), dims);
  const double local_count = double(layout.batch * layout.spatial);
  const Tensor packed =
      cat({local_mean, local_m2, full({1}, local_count, local_mean.options())}, 0);
  const Tensor all = reducer.gather(packed);
  SONATA_CHECK(all.dim() == 2 && all.size(1) == packed.numel() && all.dtype() == dtype,
               "batch_norm: the statistics reducer returned ", shape_str(all.shape()), " ",
               dtype_name(all.dtype()), " for ", packed.numel(), " values per process");
  const Tensor means = all.slice(1, 0, channels);
  const Tensor m2s = all.slice(1, channels, 2 * channels);
  const Tensor counts = all.slice(1, 2 * channels, 2 * channels + 1);  // [world, 1]
  const Tensor total = sum(counts, {0});                               // [1]
  const Tensor batch_mean = sum(means * counts, {0}) / total;
  const Tensor m2 = sum(m2s + counts * pow(means - batch_mean, 2.0), {0});
  SyncedStatistics result;
  result.mean = batch_mean.contiguous();
  result.invstd = rsqrt(m2 / total + options.eps).contiguous();
  result.count_ratio = full({1}, local_count, total.options()) / total;
  const double momentum = options.momentum;
  if (running_mean.defined()) {
    const Tensor old_mean = cast(running_mean, dtype), old_var = cast(running_var, dtype);
    Tensor(running_mean).copy_(old_mean * (1 - momentum) + batch_mean * momentum);
    Tensor(running_var).copy_(old_var * (1 - momentum) + m2 / (total - 1.0) * momentum);
  }
  return result;
}

Tensor batch_norm_impl(const char* op, bool relu, const Tensor& x, const Tensor& weight,
                       const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                       const BatchNormOptions& options,
                       const std::shared_ptr<BatchNormStatsReducer>& stats_reducer) {
  Layout layout = check_inputs(op, x, weight, bias, running_mean, running_var, options);
  // Channels-last [N, C, H, W] is, to the kernels, N*H*W rows of C channels with planes of
  // one: the same kernels, no transpose, and the layout flows on to the next layer.
  const bool channels_last = prefers_channels_last(x);
  if (channels_last) layout = Layout{layout.batch * layout.spatial, layout.channels, 1};
  const DType dtype = statistics_dtype(x.dtype());
  const Tensor in = channels_last ? x.detach() : x.detach().contiguous();
  const Tensor w = as_statistics(weight, dtype), b = as_statistics(bias, dtype);
  const bool batch_stats = options.training;
  const std::shared_ptr<BatchNormStatsReducer> sync = batch_stats ? stats_reducer : nullptr;
  Tensor mean, invstd, count_ratio;
  if (sync) {
    SyncedStatistics synced =
        synced_statistics(in, layout, running_mean, running_var, options, *sync);
    mean = synced.mean;
    invstd = synced.invstd;
    count_ratio = synced.count_ratio;
  } else if (batch_stats) {
    std::tie(mean, invstd) = batch_statistics(in, layout, running_mean, running_var, options);
  } else {
    NoGradGuard no_grad;
    mean = snapshot(running_mean, dtype);
    invstd = rsqrt(add(snapshot(running_var, dtype), options.eps));
  }
  Tensor out = channels_last ? empty_channels_last(in.shape(), in.options()) : empty_like(in);
  if (in.numel() > 0)
    SONATA_BACKEND(in.device(), batch_norm_apply, in.dtype(), in.data_ptr(), mean.data_ptr(),
                   invstd.data_ptr(), pointer(w), pointer(b), layout.batch, layout.channels,
                   layout.spatial, relu, out.data_ptr());

  const bool need_x = x.requires_grad(), need_w = w.requires_grad(), need_b = b.requires_grad();
  const Tensor saved_in = save(in), saved_w = save(w), saved_out = relu ? save(out) : Tensor();
  record(op, {x, w, b}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor gy = channels_last ? to_channels_last(g[0]) : g[0].contiguous();
    const Device device = gy.device();
    const TensorOptions stat_options = gy.options().with(dtype);
    const bool empty_input = gy.numel() == 0;
    Tensor sum_dy, sum_dy_xhat;
    if ((need_x && batch_stats) || need_w || need_b) {
      // The reduction writes every channel; an empty batch leaves the sums at zero.
      auto channel_sums = [&] {
        return empty_input ? zeros({layout.channels}, stat_options)
                           : empty({layout.channels}, stat_options);
      };
      sum_dy = channel_sums();
      sum_dy_xhat = channel_sums();
      const Tensor workspace =
          empty({SONATA_BACKEND(device, batch_norm_workspace_size, layout.batch, layout.channels,
                                layout.spatial)},
                stat_options);
      if (!empty_input)
        SONATA_BACKEND(device, batch_norm_backward_reduce, gy.dtype(), gy.data_ptr(),
                       saved_in.data_ptr(), pointer(saved_out), mean.data_ptr(), invstd.data_ptr(),
                       layout.batch, layout.channels, layout.spatial, mutable_pointer(workspace),
                       sum_dy.data_ptr(), sum_dy_xhat.data_ptr());
    }
    Tensor gx;
    Tensor x_sum_dy = sum_dy, x_sum_dy_xhat = sum_dy_xhat;
    if (need_x && sync) {
      // x's gradient takes the sums over every process; the kernel divides by this process's
      // count, so they are scaled to it.
      NoGradGuard no_grad;
      const int64_t channels = layout.channels;
      const Tensor total = sum(sync->gather(cat({sum_dy, sum_dy_xhat}, 0)), {0}) * count_ratio;
      x_sum_dy = total.slice(0, 0, channels).contiguous();
      x_sum_dy_xhat = total.slice(0, channels, 2 * channels).contiguous();
    }
    if (need_x) {
      gx = channels_last ? empty_channels_last(gy.shape(), gy.options()) : empty_like(gy);
      if (!empty_input)
        SONATA_BACKEND(device, batch_norm_backward_input, gy.dtype(), gy.data_ptr(),
                       saved_in.data_ptr(), pointer(saved_out), mean.data_ptr(), invstd.data_ptr(),
                       pointer(saved_w), batch_stats ? x_sum_dy.data_ptr() : nullptr,
                       batch_stats ? x_sum_dy_xhat.data_ptr() : nullptr, layout.batch,
                       layout.channels, layout.spatial, gx.data_ptr());
    }
    return std::vector<Tensor>{gx, need_w ? sum_dy_xhat : Tensor(), need_b ? sum_dy : Tensor()};
  });
  return out;
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormOptions& options,
                  const std::shared_ptr<BatchNormStatsReducer>& stats_reducer) {
  return batch_norm_impl("batch_norm", false, x, weight, bias, running_mean, running_var, options,
                         stats_reducer);
}

Tensor batch_norm_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var,
                       const BatchNormOptions& options,
                       const std::shared_ptr<BatchNormStatsReducer>& stats_reducer) {
  return batch_norm_impl("batch_norm_relu", true, x, weight, bias, running_mean, running_var,
                         options, stats_reducer);
}

}  // namespace sonata
