// peer_torch.py's mel workload: torchaudio MelSpectrogram(16000, n_fft=400, hop 160, n_mels 80)
// then log(x + 1e-6), on a batch of 16 ten-second clips of Gaussian noise (--batch; --size
// sets the samples per clip, default 160000). One step is FeatureExtractor::log_mel over the
// whole batch: the window, FFT plan and filterbank are built once, outside the timing, as
// torchaudio's transform builds them once. With --device cuda the batch is generated on the
// device, as peer_torch.py's is, and a step is FeatureExtractor::log_mel_batch (cuFFT, the
// filterbank as one SGEMM, log); the warm-up builds the cuFFT plans and uploads the tables.
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench/bench_work.h"
#include "data/features/spectrogram.h"
#include "engine/random.h"

namespace sonata {

BenchFields bench_mel(const BenchOptions& options) {
  const int64_t batch = options.batch ? options.batch : 16;
  const int64_t samples = options.size.empty() ? 160000 : std::stoll(options.size);
  SONATA_CHECK(batch > 0 && samples > 200,
               "bench_models: mel needs a positive --batch and "
               "--size above 200 samples");
  FeatureConfig config;  // 16 kHz, n_fft 400, n_mels 80, log(x + 1e-6)
  config.hop_length = 160;
  const FeatureExtractor extractor(config);

  manual_seed(0);
  double seconds = 0;
  if (options.device.is_cuda()) {
    const Tensor waves = randn({batch, samples}, TensorOptions{}.with(options.device));
    const std::vector<int64_t> lengths(size_t(batch), samples);
    seconds = time_steps(options, [&] { extractor.log_mel_batch(waves, lengths); });
  } else {
    const Tensor waves = randn({batch, samples});
    std::vector<std::span<const float>> clips;
    for (int64_t b = 0; b < batch; ++b)
      clips.emplace_back(waves.data<float>() + b * samples, size_t(samples));
    seconds = time_steps(options, [&] { extractor.log_mel(clips); });
  }
  const double clip_seconds = double(samples) / double(config.sample_rate);
  return {{"batch", std::to_string(batch)},
          {"clip_s", str(clip_seconds)},
          {"frames", std::to_string(extractor.frames(samples))},
          {"n_mels", std::to_string(config.n_mels)},
          {"step_ms", str(seconds * 1e3)},
          {"audio_s_per_s", str(double(batch) * clip_seconds / seconds)}};
}

}  // namespace sonata
