// Loader throughput ([data] benchmark): clips per second decoded (libsndfile), resampled to
// 16 kHz and turned into 80-band log-mel by the BatchLoader's worker threads, for 1..N
// workers, next to what a DeepSpeech2-small training step consumes, so the margin is visible.
//
//   build/bench_loader [--manifest train.tsv] [--max-workers 4] [--batch 32] [--batches 8]
//                      [--consumer-audio-s-per-s X]
//
// Without --manifest it writes --clips synthetic 16-bit WAV clips of --seconds at --rate Hz
// (44100 by default, so resampling is part of the work) into a temporary folder. One JSON
// line per worker count:
//   {"work": "loader", "workers": W, "clips_per_s": ..., "audio_s_per_s": ...,
//    "consumer_audio_s_per_s": X, "margin": audio_s_per_s / X}
// X: --consumer-audio-s-per-s (e.g. bench_models --work ds2 --device cuda's audio_s_per_s),
// else a DS2-small step measured here on the CPU (batch 8, 4 s utterances).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "base/error.h"
#include "data/audio/decode.h"
#include "data/datasets/speech_dataset.h"
#include "data/features/spectrogram.h"
#include "data/loader/batch_loader.h"
#include "data/manifest/asr_manifest.h"
#include "engine/ops.h"
#include "engine/ops/ctc.h"
#include "engine/optim/adamw.h"
#include "engine/random.h"
#include "kernels/cpu/capability.h"
#include "models/ds2.h"

using namespace sonata;

namespace {

using Clock = std::chrono::steady_clock;

void put_u32(std::ofstream& out, uint32_t v) {
  const char bytes[4] = {char(v & 255), char((v >> 8) & 255), char((v >> 16) & 255),
                         char((v >> 24) & 255)};
  out.write(bytes, 4);
}
void put_u16(std::ofstream& out, uint16_t v) {
  const char bytes[2] = {char(v & 255), char((v >> 8) & 255)};
  out.write(bytes, 2);
}

// A mono 16-bit PCM WAV of a few tones and noise.
void write_wav(const std::string& path, int64_t samples, int rate, uint64_t seed) {
  std::ofstream out(path, std::ios::binary);
  SONATA_CHECK(out, "bench_loader: cannot write ", path);
  const uint32_t data_bytes = uint32_t(samples * 2);
  out.write("RIFF", 4);
  put_u32(out, 36 + data_bytes);
  out.write("WAVEfmt ", 8);
  put_u32(out, 16);
  put_u16(out, 1);  // PCM
  put_u16(out, 1);  // mono
  put_u32(out, uint32_t(rate));
  put_u32(out, uint32_t(rate * 2));
  put_u16(out, 2);
  put_u16(out, 16);
  out.write("data", 4);
  put_u32(out, data_bytes);
  uint64_t state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  const double pi = 3.14159265358979323846;
  for (int64_t i = 0; i < samples; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double noise = double(state >> 40) / double(1 << 24) - 0.5;
    const double t = double(i) / rate;
    const double value = 0.3 * std::sin(2 * pi * (220 + 20 * double(seed % 7)) * t) +
                         0.1 * std::sin(2 * pi * 1375 * t) + 0.05 * noise;
    put_u16(out, uint16_t(int16_t(std::lround(value * 32767))));
  }
}

// Audio seconds per second that a DS2-small CPU training step consumes (batch 8, 400 frames).
double measure_ds2_step() {
  manual_seed(0);
  Ds2 model(Ds2Options{});
  const int64_t batch = 8, frames = 400, labels = 40;
  const TensorOptions i64 = TensorOptions{}.with(DType::i64);
  const Tensor x = randn({batch, 1, frames, 80});
  const Tensor targets =
      (rand({batch, labels}) * 28.0).to(DType::i64).add_(ones({batch, labels}, i64));
  const Tensor input_lengths = full({batch}, double(frames), i64);
  const Tensor target_lengths = full({batch}, double(labels), i64);
  AdamW adamw(model.parameters(), AdamOptions{.lr = 1e-3});
  const CtcOptions ctc{.blank = 0, .reduction = Reduction::mean, .zero_infinity = true};
  auto step = [&] {
    adamw.zero_grad();
    const Ds2Output out = model.forward(x, input_lengths);
    ctc_loss(out.output, targets, out.output_lengths, target_lengths, ctc).backward();
    adamw.step();
  };
  step();
  const Clock::time_point start = Clock::now();
  step();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return double(batch * frames) / 100.0 / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  std::string manifest;
  int64_t clips = 256, max_workers = 4, batch = 32, batches = 8;
  double seconds = 4.0, consumer = 0;
  int rate = 44100;
  CLI::App app{"sonata loader throughput: decode + resample + log-mel with 1..N workers"};
  app.add_option("--manifest", manifest, "ASR manifest (TSV or JSONL) to read clips from");
  app.add_option("--clips", clips, "synthetic clips (without --manifest)")->capture_default_str();
  app.add_option("--seconds", seconds, "synthetic clip length")->capture_default_str();
  app.add_option("--rate", rate, "synthetic clips' sample rate")->capture_default_str();
  app.add_option("--max-workers", max_workers, "workers from 1 to this")->capture_default_str();
  app.add_option("--batch", batch, "clips per batch")->capture_default_str();
  app.add_option("--batches", batches, "batches timed per worker count")->capture_default_str();
  app.add_option("--consumer-audio-s-per-s", consumer,
                 "what the training step consumes (default: DS2-small on this CPU)");
  CLI11_PARSE(app, argc, argv);
  try {
    SONATA_CHECK(audio_decoding_available(),
                 "bench_loader: this build has no libsndfile (SONATA_SNDFILE=OFF)");
    SONATA_CHECK(max_workers >= 1 && batch >= 1 && batches >= 1 && clips >= 1 && seconds > 0,
                 "bench_loader: --max-workers, --batch, --batches, --clips and --seconds must "
                 "be positive");
    std::vector<std::string> paths;
    std::filesystem::path scratch;
    if (manifest.empty()) {
      scratch = std::filesystem::temp_directory_path() /
                ("sonata_bench_loader_" + std::to_string(::getpid()));
      std::filesystem::create_directories(scratch);
      for (int64_t c = 0; c < clips; ++c) {
        paths.push_back((scratch / ("clip" + std::to_string(c) + ".wav")).string());
        write_wav(paths.back(), int64_t(seconds * rate), rate, uint64_t(c));
      }
    } else {
      for (const AsrEntry& entry : read_asr_manifest(manifest)) paths.push_back(entry.path);
      SONATA_CHECK(!paths.empty(), "bench_loader: ", manifest, " lists no clips");
    }
    FeatureConfig config;  // DS2's input: 80 log-mel bands every 10 ms at 16 kHz
    config.hop_length = 160;
    const FeatureExtractor extractor(config);
    const int64_t target_rate = extractor.config().sample_rate;
    // No augmentation: the decode-to-batch path alone, batched as the trainer's batches
    // (SpeechBatcher: [B, 1, T_max, n_mels] zero-padded, audio seconds at the feature rate).
    const SpeechBatcher batcher(extractor, SpeechAugment{});
    // One batch: decode, resample, log-mel each clip (the speech dataset's path), then pad.
    auto make = [&](const std::vector<int64_t>& items, int64_t) {
      std::vector<Tensor> features;
      for (int64_t item : items)
        features.push_back(
            extractor.log_mel(decode_clip(paths[size_t(item) % paths.size()], target_rate)));
      return batcher.pad(features, {});
    };
    if (consumer <= 0) consumer = measure_ds2_step();
    // Untimed: the resampling filter bank, the FFT plan's first use, the files into the cache.
    for (int64_t first = 0; first < int64_t(paths.size()); first += batch) {
      std::vector<int64_t> items;
      for (int64_t i = first; i < std::min<int64_t>(first + batch, int64_t(paths.size())); ++i)
        items.push_back(i);
      make(items, 0);
    }
    std::vector<std::vector<int64_t>> plan;
    for (int64_t b = 0; b < batches; ++b) {
      plan.emplace_back();
      for (int64_t i = 0; i < batch; ++i) plan.back().push_back(b * batch + i);
    }
    for (int64_t workers = 1; workers <= max_workers; ++workers) {
      BatchLoader loader(make, workers, 2 * workers);
      loader.start(plan, 0);
      const Clock::time_point start = Clock::now();
      double audio = 0;
      int64_t items = 0;
      while (std::optional<HostBatch> next = loader.next()) {
        audio += next->audio_seconds;
        items += next->items;
      }
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      std::printf(
          "{\"work\": \"loader\", \"device\": \"cpu\", \"workers\": %lld, \"batch\": %lld, "
          "\"clips\": %lld, \"clips_per_s\": %.1f, \"audio_s_per_s\": %.1f, "
          "\"consumer_audio_s_per_s\": %.1f, \"margin\": %.2f, \"cpu_capability\": \"%s\"}\n",
          static_cast<long long>(workers), static_cast<long long>(batch),
          static_cast<long long>(items), double(items) / elapsed, audio / elapsed, consumer,
          audio / elapsed / consumer, kernels::cpu::capability_name());
      std::fflush(stdout);
    }
    if (!scratch.empty()) std::filesystem::remove_all(scratch);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_loader: %s\n", error.what());
    return 1;
  }
  return 0;
}
