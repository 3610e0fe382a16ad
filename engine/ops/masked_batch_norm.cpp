// masked_batch_norm: validation, the statistics of the valid values (or the running ones),
// the kernels, and the backward.
#include "engine/ops/masked_batch_norm.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "kernels/cpu/masked_batch_norm.h"
#if SONATA_WITH_CUDA
#include "kernels/cuda/masked_batch_norm.h"
#endif

namespace sonata {
namespace {

constexpr const char* kOp = "masked_batch_norm";

DType statistics_dtype(DType x) {
  return x == DType::f64 ? DType::f64 : DType::f32;
}

void check_channel_vector(const char* name, const Tensor& t, const Tensor& x) {
  if (!t.defined()) return;
  SONATA_CHECK(is_floating(t.dtype()), kOp, ": ", name, " must be floating-point, got ",
               dtype_name(t.dtype()));
  SONATA_CHECK(t.dim() == 1 && t.size(0) == x.size(1), kOp, ": ", name, " must have shape [",
               x.size(1), "] (one value per channel of x ", shape_str(x.shape()), "), got ",
               shape_str(t.shape()));
  SONATA_CHECK(t.device() == x.device(), kOp, ": ", name, " is on ", t.device().str(),
               " but x is on ", x.device().str());
}

// The layout and the valid values per channel; every argument error is one sentence.
std::pair<kernels::SequenceLayout, int64_t> check_inputs(
    const Tensor& x, const Tensor& lengths, const Tensor& weight, const Tensor& bias,
    const Tensor& running_mean, const Tensor& running_var, const BatchNormOptions& options,
    bool synced, std::vector<int64_t>& valid_lengths) {
  SONATA_CHECK(x.defined(), kOp, ": x is undefined");
  SONATA_CHECK(is_floating(x.dtype()), kOp, ": x must be floating-point, got ",
               dtype_name(x.dtype()));
  SONATA_CHECK(x.dim() >= 3, kOp, ": x must have shape [N, C, T, *] (time along dim 2), got ",
               shape_str(x.shape()));
  SONATA_CHECK(lengths.defined() &&
                   (lengths.dtype() == DType::i64 || lengths.dtype() == DType::i32) &&
                   lengths.shape() == Shape{x.size(0)},
               kOp, ": lengths must be integers [", x.size(0), "] (one per sample of x ",
               shape_str(x.shape()), "), got ",
               lengths.defined()
                   ? std::string(dtype_name(lengths.dtype())) + " " + shape_str(lengths.shape())
                   : std::string("undefined"));
  check_channel_vector("weight", weight, x);
  check_channel_vector("bias", bias, x);
  check_channel_vector("running_mean", running_mean, x);
  check_channel_vector("running_var", running_var, x);
  SONATA_CHECK(running_mean.defined() == running_var.defined(), kOp,
               ": running_mean and running_var must be given together");
  SONATA_CHECK(options.training || running_mean.defined(), kOp,
               ": evaluation mode needs running_mean and running_var");
  SONATA_CHECK(!running_mean.requires_grad() && !running_var.requires_grad(), kOp,
               ": running_mean and running_var are buffers and must not require grad");
  SONATA_CHECK(std::isfinite(options.momentum) && options.eps >= 0, kOp, ": momentum ",
               options.momentum, " and eps ", options.eps, " must be finite and eps >= 0");
  kernels::SequenceLayout layout;
  layout.batch = x.size(0);
  layout.channels = x.size(1);
  layout.time = x.size(2);
  for (int64_t d = 3; d < x.dim(); ++d) layout.inner *= x.size(d);
  valid_lengths = lengths.to(Device::cpu()).to(DType::i64).to_vector<int64_t>();
  int64_t frames = 0;
  for (size_t n = 0; n < valid_lengths.size(); ++n) {
    SONATA_CHECK(valid_lengths[n] >= 0 && valid_lengths[n] <= layout.time, kOp, ": length ",
                 valid_lengths[n], " of sample ", n, " is outside [0, ", layout.time,
                 "] (the frames of x ", shape_str(x.shape()), ")");
    frames += valid_lengths[n];
  }
  const int64_t count = frames * layout.inner;
  SONATA_CHECK(!options.training || synced || count > 1, kOp,
               ": training needs more than one valid value per channel, got ", count,
               " (lengths summing to ", frames, " frames of x ", shape_str(x.shape()), ")");
  return {layout, count};
}

// A private copy of a running statistic in the statistics dtype.
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

// Mean and invstd of the valid values; updates the running stats (through a statistics-dtype
// copy when they are stored otherwise).
std::pair<Tensor, Tensor> valid_statistics(const Tensor& in, const Tensor& lengths,
                                           const kernels::SequenceLayout& layout, int64_t count,
                                           const Tensor& running_mean, const Tensor& running_var,
                                           const BatchNormOptions& options) {
  const DType dtype = statistics_dtype(in.dtype());
  const TensorOptions stat_options = in.options().with(dtype);
  const Tensor mean = empty({layout.channels}, stat_options);
  const Tensor invstd = empty({layout.channels}, stat_options);
  auto work_copy = [&](const Tensor& running) {
    if (!running.defined()) return Tensor();
    if (running.dtype() == dtype && running.is_contiguous()) return running;
    return snapshot(running, dtype);
  };
  const Tensor mean_work = work_copy(running_mean), var_work = work_copy(running_var);
  if (layout.channels > 0)
    SONATA_BACKEND(in.device(), masked_batch_norm_statistics, in.dtype(), in.data_ptr(),
                   lengths.data<int64_t>(), layout, count, options.eps, options.momentum,
                   mutable_pointer(mean_work), mutable_pointer(var_work), mean.data_ptr(),
                   invstd.data_ptr());
  NoGradGuard no_grad;
  for (auto [work, running] :
       {std::pair{mean_work, running_mean}, std::pair{var_work, running_var}})
    if (work.defined() && !work.same(running)) running.copy_(work);
  return {mean, invstd};
}

struct SyncedStatistics {
  Tensor mean, invstd;
  Tensor count_ratio;  // [1]: this process's valid values per channel over every process's
};

// The statistics of the valid values over every process: each one's count, mean and M2
// (sum of squared deviations) gathered and combined with Chan's formula, as batch_norm's
// SyncBatchNorm path does; the running statistics get the unbiased variance over them all.
// Through tensor ops with a 0/1 mask of the valid frames: it runs once per step on small
// per-channel results.
SyncedStatistics synced_statistics(const Tensor& in, const std::vector<int64_t>& valid_lengths,
                                   const kernels::SequenceLayout& layout, int64_t count,
                                   const Tensor& running_mean, const Tensor& running_var,
                                   const BatchNormOptions& options,
                                   BatchNormStatsReducer& reducer) {
  NoGradGuard no_grad;
  const DType dtype = statistics_dtype(in.dtype());
  const int64_t channels = layout.channels;
  std::vector<double> valid(size_t(layout.batch * layout.time), 0.0);
  for (int64_t n = 0; n < layout.batch; ++n)
    for (int64_t t = 0; t < valid_lengths[size_t(n)]; ++t) valid[size_t(n * layout.time + t)] = 1;
  Shape mask_shape(size_t(in.dim()), 1), per_channel(size_t(in.dim()), 1);
  mask_shape[0] = layout.batch;
  mask_shape[2] = layout.time;
  per_channel[1] = channels;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < in.dim(); ++d)
    if (d != 1) dims.push_back(d);
  const Tensor mask =
      from_vector(valid, mask_shape, TensorOptions{}.with(DType::f64)).to(dtype).to(in.device());
  const Tensor xs = cast(in, dtype);
  // A process without valid values contributes mean 0 and count 0.
  const Tensor local_mean = sum(xs * mask, dims) / double(std::max<int64_t>(count, 1));
  const Tensor local_m2 = sum(pow((xs - local_mean.reshape(per_channel)) * mask, 2.0), dims);
  const Tensor packed =
      cat({local_mean, local_m2, full({1}, double(count), local_mean.options())}, 0);
  const Tensor all = reducer.gather(packed);
  SONATA_CHECK(all.dim() == 2 && all.size(1) == packed.numel() && all.dtype() == dtype, kOp,
               ": the statistics reducer returned ", shape_str(all.shape()), " ",
               dtype_name(all.dtype()), " for ", packed.numel(), " values per process");
  const Tensor means = all.slice(1, 0, channels);
  const Tensor m2s = all.slice(1, channels, 2 * channels);
  const Tensor counts = all.slice(1, 2 * channels, 2 * channels + 1);  // [world, 1]
  const Tensor total = sum(counts, {0});                               // [1]
  const double total_count = total.to(Device::cpu()).to(DType::f64).to_vector<double>()[0];
  SONATA_CHECK(!options.training || total_count > 1, kOp,
               ": training needs more than one valid value per channel over every process, got ",
               total_count);
  const Tensor batch_mean = sum(means * counts, {0}) / total;
  const Tensor m2 = sum(m2s + counts * pow(means - batch_mean, 2.0), {0});
  SyncedStatistics result;
  result.mean = batch_mean.contiguous();
  result.invstd = rsqrt(m2 / total + options.eps).contiguous();
  result.count_ratio = full({1}, double(count), total.options()) / total;
  const double momentum = options.momentum;
  if (running_mean.defined()) {
    const Tensor old_mean = cast(running_mean, dtype), old_var = cast(running_var, dtype);
    Tensor(running_mean).copy_(old_mean * (1 - momentum) + batch_mean * momentum);
    Tensor(running_var).copy_(old_var * (1 - momentum) + m2 / (total - 1.0) * momentum);
  }
  return result;
}

}  // namespace

Tensor masked_batch_norm(const Tensor& x, const Tensor& lengths, const Tensor& weight,
                         const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                         const BatchNormOptions& options,
                         const std::shared_ptr<BatchNormStatsReducer>& stats_reducer) {
  const std::shared_ptr<BatchNormStatsReducer> sync = options.training ? stats_reducer : nullptr;
  std::vector<int64_t> valid_lengths;
  // Named copies, not a structured binding: clang before 16 cannot capture a binding in the
  // backward lambda below (the fuzz build is clang 14).
  const auto checked = check_inputs(x, lengths, weight, bias, running_mean, running_var, options,
                                    sync != nullptr, valid_lengths);
  const auto layout = checked.first;
  const auto count = checked.second;
  const DType dtype = statistics_dtype(x.dtype());
  const Tensor in = x.detach().contiguous();
  const Tensor device_lengths = from_vector(valid_lengths, {layout.batch}).to(x.device());
  const Tensor w = weight.defined() ? cast(weight, dtype).contiguous() : Tensor();
  const Tensor b = bias.defined() ? cast(bias, dtype).contiguous() : Tensor();
  const bool batch_stats = options.training;
  Tensor mean, invstd, count_ratio;
  if (sync) {
    SyncedStatistics synced = synced_statistics(in, valid_lengths, layout, count, running_mean,
                                                running_var, options, *sync);
    mean = synced.mean;
    invstd = synced.invstd;
    count_ratio = synced.count_ratio;
  } else if (batch_stats) {
    std::tie(mean, invstd) =
        valid_statistics(in, device_lengths, layout, count, running_mean, running_var, options);
  } else {
    NoGradGuard no_grad;
    mean = snapshot(running_mean, dtype);
    invstd = rsqrt(add(snapshot(running_var, dtype), options.eps));
  }
  Tensor out = empty_like(in);
  if (in.numel() > 0)
    SONATA_BACKEND(in.device(), masked_batch_norm_apply, in.dtype(), in.data_ptr(),
                   device_lengths.data<int64_t>(), mean.data_ptr(), invstd.data_ptr(), pointer(w),
                   pointer(b), layout, out.data_ptr());

  const bool need_x = x.requires_grad(), need_w = w.requires_grad(), need_b = b.requires_grad();
  const Tensor saved_in = save(in), saved_w = save(w), saved_lengths = device_lengths;
  record(kOp, {x, w, b}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor gy = g[0].contiguous();
    const Device device = gy.device();
    const TensorOptions stat_options = gy.options().with(dtype);
    const bool empty_input = gy.numel() == 0;
    Tensor sum_dy, sum_dy_xhat;
    if ((need_x && batch_stats) || need_w || need_b) {
      sum_dy = zeros({layout.channels}, stat_options);
      sum_dy_xhat = zeros({layout.channels}, stat_options);
      if (!empty_input)
        SONATA_BACKEND(device, masked_batch_norm_backward_reduce, gy.dtype(), gy.data_ptr(),
                       saved_in.data_ptr(), saved_lengths.data<int64_t>(), mean.data_ptr(),
                       invstd.data_ptr(), layout, sum_dy.data_ptr(), sum_dy_xhat.data_ptr());
    }
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
    Tensor gx;
    if (need_x) {
      gx = empty_like(gy);
      if (!empty_input)
        SONATA_BACKEND(
            device, masked_batch_norm_backward_input, gy.dtype(), gy.data_ptr(),
            saved_in.data_ptr(), saved_lengths.data<int64_t>(), mean.data_ptr(), invstd.data_ptr(),
            pointer(saved_w), batch_stats ? x_sum_dy.data_ptr() : nullptr,
            batch_stats ? x_sum_dy_xhat.data_ptr() : nullptr, count, layout, gx.data_ptr());
    }
    return std::vector<Tensor>{gx, need_w ? sum_dy_xhat : Tensor(), need_b ? sum_dy : Tensor()};
  });
  return out;
}

}  // namespace sonata
