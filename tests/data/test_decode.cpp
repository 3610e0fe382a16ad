// Audio decoding: a 16-bit WAV written byte by byte here (known samples, so the x / 32768
// scale is checked against arithmetic, not against libsndfile), files written by libsndfile
// itself (FLAC, float WAV, Ogg/Vorbis, Opus, MP3) read back, the mean downmix, and the
// one-sentence errors for missing, empty, garbage, truncated, zero-length and NaN files.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/audio/decode.h"
#include "tests/support/audio_files.h"

#if SONATA_WITH_SNDFILE
#include <sndfile.h>
#include <unistd.h>
#endif

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

#if SONATA_WITH_SNDFILE
namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes `frames` x `channels` interleaved floats with libsndfile in `format`.
void write_with_sndfile(const std::string& path, int format, int channels, int rate,
                        const std::vector<float>& interleaved) {
  SF_INFO info{};
  info.samplerate = rate;
  info.channels = channels;
  info.format = format;
  SNDFILE* file = sf_open(path.c_str(), SFM_WRITE, &info);
  INFO(path << ": " << sf_strerror(nullptr));
  REQUIRE(file != nullptr);
  const sf_count_t frames = sf_count_t(interleaved.size()) / channels;
  if (frames > 0) REQUIRE(sf_writef_float(file, interleaved.data(), frames) == frames);
  sf_close(file);
}

bool can_write(int format) {
  SF_INFO info{};
  info.samplerate = 16000;
  info.channels = 1;
  info.format = format;
  return sf_format_check(&info) != 0;
}

std::vector<float> tone(int64_t frames, double hz, int rate, float amplitude) {
  std::vector<float> x(static_cast<size_t>(frames));
  for (int64_t i = 0; i < frames; ++i)
    x[size_t(i)] = amplitude * float(std::sin(2 * std::numbers::pi * hz * double(i) / rate));
  return x;
}

// Pearson correlation: lossy codecs keep the waveform's shape, not its samples.
double correlation(const std::vector<float>& a, const std::vector<float>& b, size_t count) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < count; ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

}  // namespace

TEST_CASE("16-bit WAV samples are x / 32768, as torchaudio loads them", "[audio]") {
  const TemporaryFolder folder("known16");
  const std::vector<int16_t> q = {0, 1, -1, 16384, -16384, 32767, -32768, 12345, -2};
  const std::string path = folder.file("known16.wav");
  const std::vector<uint8_t> bytes = pcm16_wav(q, 1, 8000);
  write_bytes(path, bytes);
  for (const Audio& audio :
       {decode_audio(path), decode_audio_memory(bytes.data(), bytes.size(), "known16")}) {
    CHECK(audio.sample_rate == 8000);
    CHECK(audio.source_channels == 1);
    REQUIRE(audio.samples.size() == q.size());
    for (size_t i = 0; i < q.size(); ++i) CHECK(audio.samples[i] == float(q[i]) / 32768.0f);
  }
  CHECK(decode_audio(path).samples[6] == -1.0f);
  CHECK(decode_audio(path).samples[5] == 32767.0f / 32768.0f);  // never reaches +1
}

TEST_CASE("Stereo and 3-channel audio is downmixed by the mean", "[audio]") {
  const TemporaryFolder folder("downmix");
  // Left/right in a hand-written 16-bit WAV: means of integers, exact in float.
  const std::vector<int16_t> stereo = {1000, 3000, -32768, 32767, 20, -20, 7, 8};
  const std::string path = folder.file("stereo16.wav");
  write_bytes(path, pcm16_wav(stereo, 2, 16000));
  const Audio audio = decode_audio(path);
  CHECK(audio.source_channels == 2);
  REQUIRE(audio.samples.size() == 4);
  for (size_t f = 0; f < 4; ++f)
    CHECK(audio.samples[f] == Approx((stereo[2 * f] + stereo[2 * f + 1]) / 2.0 / 32768.0));

  // Three float channels written by libsndfile.
  std::vector<float> interleaved;
  for (int i = 0; i < 300; ++i) {
    interleaved.push_back(0.5f * std::sin(0.01f * float(i)));
    interleaved.push_back(-0.25f);
    interleaved.push_back(0.001f * float(i));
  }
  const std::string float_path = folder.file("three.wav");
  write_with_sndfile(float_path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 3, 22050, interleaved);
  const Audio three = decode_audio(float_path);
  CHECK(three.sample_rate == 22050);
  CHECK(three.source_channels == 3);
  REQUIRE(three.samples.size() == 300);
  double worst = 0;
  for (size_t f = 0; f < 300; ++f) {
    const double mean =
        (double(interleaved[3 * f]) + interleaved[3 * f + 1] + interleaved[3 * f + 2]) / 3.0;
    worst = std::max(worst, std::abs(three.samples[f] - mean));
  }
  CHECK(worst < 1e-7);
}

TEST_CASE("FLAC decodes losslessly at 16 and 24 bits", "[audio]") {
  const TemporaryFolder folder("flac");
  for (const int bits : {16, 24}) {
    INFO(bits << "-bit FLAC");
    // Integers k written as ints (libsndfile scales floats by 2^(bits-1) - 1 on writing, so
    // floats would not round-trip), read back as k / 2^(bits-1).
    std::vector<int32_t> k;
    for (int i = 0; i < 5000; ++i)
      k.push_back(int32_t(std::round(0.6 * std::ldexp(1.0, bits - 1) * std::sin(0.003 * i))) +
                  (i % 7) - 3);
    k[10] = -(1 << (bits - 1));  // the most negative sample: exactly -1
    const std::string path = folder.file("lossless" + std::to_string(bits) + ".flac");
    SF_INFO info{};
    info.samplerate = 16000;
    info.channels = 1;
    info.format = SF_FORMAT_FLAC | (bits == 16 ? SF_FORMAT_PCM_16 : SF_FORMAT_PCM_24);
    SNDFILE* file = sf_open(path.c_str(), SFM_WRITE, &info);
    REQUIRE(file != nullptr);
    std::vector<int32_t> left_aligned;  // sf_write_int takes 32-bit left-aligned samples
    for (const int32_t v : k) left_aligned.push_back(int32_t(uint32_t(v) << (32 - bits)));
    REQUIRE(sf_writef_int(file, left_aligned.data(), sf_count_t(k.size())) == sf_count_t(k.size()));
    sf_close(file);

    const Audio audio = decode_audio(path);
    CHECK(audio.sample_rate == 16000);
    REQUIRE(audio.samples.size() == k.size());
    size_t mismatches = 0;
    for (size_t i = 0; i < k.size(); ++i)
      mismatches += audio.samples[i] != float(std::ldexp(double(k[i]), 1 - bits));
    CHECK(mismatches == 0);
    CHECK(audio.samples[10] == -1.0f);
  }
}

TEST_CASE("Lossy formats decode when this libsndfile supports them", "[audio]") {
  const TemporaryFolder folder("lossy");
  struct Format {
    const char* name;
    int format;
  };
  const Format formats[] = {{"vorbis.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS},
                            {"opus.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS},
                            {"layer3.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III}};
  const int64_t frames = 16000;
  const std::vector<float> x = tone(frames, 440.0, 16000, 0.5f);
  for (const Format& f : formats) {
    INFO(f.name);
    if (!can_write(f.format)) {
      WARN("libsndfile here cannot write " << f.name << ": skipped");
      continue;
    }
    const std::string path = folder.file(f.name);
    write_with_sndfile(path, f.format, 1, 16000, x);
    const Audio audio = decode_audio(path);
    CHECK(audio.sample_rate == 16000);
    CHECK(audio.source_channels == 1);
    // Codec delay is trimmed by the container (Ogg granules, MP3's LAME header).
    CHECK(std::abs(int64_t(audio.samples.size()) - frames) <= 1152);
    const size_t n = std::min(audio.samples.size(), x.size());
    CHECK(correlation(audio.samples, x, n) > 0.95);
  }
}

TEST_CASE("Decode errors name the file and the reason", "[audio]") {
  const TemporaryFolder folder("decode_errors");
  const std::string missing = folder.file("no_such_file.wav");
  REQUIRE_THROWS_WITH(decode_audio(missing), Contains(missing) && Contains("does not exist"));
  const std::string directory = folder.file("a_folder.wav");
  std::filesystem::create_directories(directory);
  REQUIRE_THROWS_WITH(decode_audio(directory), Contains("a_folder.wav") && Contains("directory"));

  const std::string empty = folder.file("empty.wav");
  write_bytes(empty, {});
  REQUIRE_THROWS_WITH(decode_audio(empty), Contains("empty.wav") && Contains("empty (0 bytes)"));

  std::vector<uint8_t> garbage(4000);
  uint32_t state = 12345;
  for (uint8_t& b : garbage) b = uint8_t((state = state * 1664525u + 1013904223u) >> 24);
  const std::string garbage_path = folder.file("garbage.wav");
  write_bytes(garbage_path, garbage);
  REQUIRE_THROWS_WITH(decode_audio(garbage_path),
                      Contains("garbage.wav") && Contains("not in a format libsndfile"));
  REQUIRE_THROWS_WITH(decode_audio_memory(garbage.data(), garbage.size(), "clip 7"),
                      Contains("'clip 7'") && Contains("not in a format"));

  // A WAV cut inside its header, and one cut inside its data chunk.
  const std::vector<uint8_t> wav = pcm16_wav(std::vector<int16_t>(2000, 100), 1, 16000);
  const std::string header_cut = folder.file("header_cut.wav");
  write_bytes(header_cut, std::vector<uint8_t>(wav.begin(), wav.begin() + 30));
  REQUIRE_THROWS_WITH(decode_audio(header_cut),
                      Contains("header_cut.wav") && Contains("corrupt or truncated"));
  const std::string data_cut = folder.file("data_cut.wav");
  write_bytes(data_cut, std::vector<uint8_t>(wav.begin(), wav.begin() + 44 + 1000));
  REQUIRE_THROWS_WITH(decode_audio(data_cut), Contains("data_cut.wav") && Contains("truncated"));

  // A FLAC stream cut in half: fewer frames than its STREAMINFO declares.
  const std::string flac = folder.file("whole.flac");
  write_with_sndfile(flac, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 1, 16000,
                     tone(48000, 300.0, 16000, 0.3f));
  std::vector<uint8_t> flac_bytes = read_bytes(flac);
  flac_bytes.resize(flac_bytes.size() / 2);
  const std::string flac_cut = folder.file("cut.flac");
  write_bytes(flac_cut, flac_bytes);
  REQUIRE_THROWS_WITH(decode_audio(flac_cut), Contains("cut.flac") && Contains("truncated"));

  // Zero frames, and a NaN in a float WAV.
  const std::string silent = folder.file("zero_length.wav");
  write_with_sndfile(silent, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 1, 16000, {});
  REQUIRE_THROWS_WITH(decode_audio(silent),
                      Contains("zero_length.wav") && Contains("no audio samples"));
  std::vector<float> with_nan(100, 0.25f);
  with_nan[42] = std::numeric_limits<float>::quiet_NaN();
  const std::string nan_path = folder.file("nan.wav");
  write_with_sndfile(nan_path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 1, 16000, with_nan);
  REQUIRE_THROWS_WITH(decode_audio(nan_path),
                      Contains("nan.wav") && Contains("non-finite") && Contains("frame 42"));
}

TEST_CASE("A WAV whose RIFF and data sizes are 0xFFFFFFFF (written to a pipe) reads to its end",
          "[audio]") {
  const TemporaryFolder folder("decode_streaming_wav");
  std::vector<int16_t> samples(8000);  // 0.5 s at 16 kHz
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = int16_t(int(i % 200) * 50 - 5000);
  std::vector<uint8_t> wav = pcm16_wav(samples, 1, 16000);
  const std::string whole = folder.file("whole.wav");
  write_bytes(whole, wav);
  REQUIRE(std::string(wav.begin() + 36, wav.begin() + 40) == "data");
  for (const size_t at : {size_t(4), size_t(40)})
    for (size_t i = 0; i < 4; ++i) wav[at + i] = 0xFF;
  const std::string streamed = folder.file("streamed.wav");
  write_bytes(streamed, wav);
  const Audio audio = decode_audio(streamed);
  CHECK(audio.samples == decode_audio(whole).samples);
  CHECK(audio.samples.size() == samples.size());
  CHECK(declared_seconds(streamed) == 0.5);
  // A data size that is no streaming mark and more than the file holds is still truncation.
  wav[40] = 0xFE;
  const std::string cut = folder.file("cut.wav");
  write_bytes(cut, wav);
  CHECK_THROWS_WITH(decode_audio(cut), Contains("cut.wav") && Contains("truncated"));
}

TEST_CASE("This build decodes audio", "[audio]") {
  CHECK(audio_decoding_available());
}

#else

TEST_CASE("Without libsndfile, decoding throws saying so", "[audio]") {
  CHECK_FALSE(audio_decoding_available());
  REQUIRE_THROWS_WITH(decode_audio("x.wav"), Contains("x.wav") && Contains("without libsndfile"));
}

#endif
