// FeatureExtractor's CUDA path: the config in kernels/cuda/mel.h's terms, the window and
// filterbank uploaded once per device, the batch's lengths and workspace, the launch.
#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "base/error.h"
#include "data/features/spectrogram.h"
#if SONATA_WITH_CUDA
#include "engine/cuda/stream.h"
#include "kernels/cuda/mel.h"
#endif

namespace sonata {

struct FeatureDeviceTables {
  std::mutex mutex;
  // device index -> (window [n_fft], filterbank [bins, n_mels]), both f32 on that device.
  std::map<int, std::pair<Tensor, Tensor>> tables;
};

std::shared_ptr<FeatureDeviceTables> make_feature_device_tables() {
  return std::make_shared<FeatureDeviceTables>();
}

std::vector<Tensor> FeatureExtractor::log_mel_on(
    Device device, const std::vector<std::span<const float>>& clips) const {
  if (device.is_cpu()) return log_mel(clips);
  if (!cuda_available())
    throw Error(str("log_mel_on ", device.str(), ": ", cuda_unavailable_reason()));
  int64_t longest = 0;
  std::vector<int64_t> lengths;
  for (const std::span<const float>& clip : clips) {
    check_clip(int64_t(clip.size()), "log_mel_on");
    lengths.push_back(int64_t(clip.size()));
    longest = std::max(longest, int64_t(clip.size()));
  }
  if (clips.empty()) return {};
  // One host block, zeros past each clip, copied to the device in one transfer. Page-locked,
  // so that the copy queues behind the stream's work instead of the host waiting for it.
  TensorOptions pinned;
  pinned.pinned = true;
  const Tensor host = empty({int64_t(clips.size()), longest}, pinned);
  float* rows = host.data<float>();
  for (size_t c = 0; c < clips.size(); ++c) {
    float* row = rows + int64_t(c) * longest;
    std::fill(std::copy(clips[c].begin(), clips[c].end(), row), row + longest, 0.0f);
  }
  const Tensor all = log_mel_batch(host.to(device, /*non_blocking=*/true), lengths);
  std::vector<Tensor> outs;
  for (size_t c = 0; c < clips.size(); ++c)
    outs.push_back(all.select(0, int64_t(c)).slice(0, 0, frames(lengths[c])));
  return outs;
}

#if SONATA_WITH_CUDA

namespace {

namespace gpu = kernels::cuda;

gpu::LogMelConfig gpu_config(const FeatureConfig& c) {
  gpu::LogMelConfig g;
  g.n_fft = c.n_fft;
  g.hop_length = c.resolved_hop_length();
  g.center = c.center;
  g.padding = c.pad_mode == PadMode::reflect ? gpu::MelPadding::reflect : gpu::MelPadding::constant;
  g.n_mels = c.n_mels;
  g.power = float(c.power);
  g.log = c.log == FeatureLog::none  ? gpu::MelLogKind::none
          : c.log == FeatureLog::log ? gpu::MelLogKind::log
                                     : gpu::MelLogKind::db;
  g.log_offset = float(c.log_offset);
  // As the CPU path: 20 log10 for magnitudes, 10 log10 otherwise.
  g.db_multiplier = c.power == 1.0 ? 20.0f : 10.0f;
  g.top_db = c.log == FeatureLog::db && c.top_db ? float(*c.top_db) : -1.0f;
  g.normalize = c.normalize == FeatureNormalize::none        ? gpu::MelNormalize::none
                : c.normalize == FeatureNormalize::utterance ? gpu::MelNormalize::utterance
                                                             : gpu::MelNormalize::per_feature;
  return g;
}

}  // namespace

Tensor FeatureExtractor::log_mel_batch(const Tensor& samples,
                                       const std::vector<int64_t>& lengths) const {
  SONATA_CHECK(samples.defined() && samples.device().is_cuda() && samples.dtype() == DType::f32 &&
                   samples.dim() == 2,
               "log_mel_batch: samples must be a [clips, samples] f32 tensor on a CUDA device");
  const int64_t clips = samples.size(0), stride = samples.size(1);
  SONATA_CHECK(int64_t(lengths.size()) == clips, "log_mel_batch: ", lengths.size(), " lengths for ",
               clips, " clips");
  int64_t max_frames = 0;
  std::vector<int64_t> frame_counts;
  for (const int64_t length : lengths) {
    check_clip(length, "log_mel_batch");
    SONATA_CHECK(length <= stride, "log_mel_batch: a clip of ", length,
                 " samples is longer than the batch's ", stride);
    frame_counts.push_back(frames(length));
    max_frames = std::max(max_frames, frame_counts.back());
  }
  const Device device = samples.device();
  const TensorOptions on_device = TensorOptions{}.with(device);
  if (clips == 0) return empty({0, 0, config_.n_mels}, on_device);

  std::pair<Tensor, Tensor> tables;
  {
    const std::lock_guard<std::mutex> lock(device_tables_->mutex);
    auto found = device_tables_->tables.find(device.index);
    if (found == device_tables_->tables.end()) {
      std::vector<float> window(size_t(config_.n_fft));
      kernels::cpu::hann_window(config_.resolved_win_length(), config_.n_fft, /*periodic=*/true,
                                window.data());
      const std::vector<float> filterbank(filterbank_.begin(), filterbank_.end());
      found = device_tables_->tables
                  .emplace(device.index,
                           std::make_pair(from_vector(window, {config_.n_fft}, on_device),
                                          from_vector(filterbank, {config_.bins(), config_.n_mels},
                                                      on_device)))
                  .first;
    }
    tables = found->second;
  }

  const gpu::LogMelConfig config = gpu_config(config_);
  const Tensor input = samples.contiguous();
  // Lengths and frame counts in one page-locked block, one copy that does not wait.
  TensorOptions pinned_i64 = TensorOptions{}.with(DType::i64);
  pinned_i64.pinned = true;
  const Tensor counts = empty({2, clips}, pinned_i64);
  std::copy(lengths.begin(), lengths.end(), counts.data<int64_t>());
  std::copy(frame_counts.begin(), frame_counts.end(), counts.data<int64_t>() + clips);
  const Tensor counts_on_device = counts.to(device, /*non_blocking=*/true);
  const Tensor lengths_on_device = counts_on_device.select(0, 0);
  const Tensor frames_on_device = counts_on_device.select(0, 1);
  const Tensor workspace =
      empty({gpu::log_mel_workspace_floats(config, clips * max_frames)}, on_device);
  Tensor out = empty({clips, max_frames, config_.n_mels}, on_device);
  const gpu::LogMelBatch batch{clips, stride, max_frames, lengths_on_device.data<int64_t>(),
                               frames_on_device.data<int64_t>()};
  // The temporaries above are freed on this stream after the launches, stream-ordered.
  gpu::log_mel(config, tables.first.data<float>(), tables.second.data<float>(), input.data<float>(),
               batch, lengths.data(), workspace.data<float>(), out.data<float>(),
               current_stream(device.index));
  return out;
}

#else

Tensor FeatureExtractor::log_mel_batch(const Tensor& samples, const std::vector<int64_t>&) const {
  throw Error(str("log_mel_batch on ", samples.defined() ? samples.device().str() : "cuda", ": ",
                  cuda_unavailable_reason()));
}

#endif

}  // namespace sonata
