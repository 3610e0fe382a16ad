#include "tests/support/audio_files.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numbers>
#include <string>

namespace sonata::testing {

TemporaryFolder::TemporaryFolder(const std::string& name)
    : path_(std::filesystem::temp_directory_path() /
            ("sonata_test_" + name + "_" + std::to_string(::getpid()))) {
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TemporaryFolder::~TemporaryFolder() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

namespace {
void put(std::vector<uint8_t>& out, uint32_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(uint8_t(value >> (8 * i)));
}
}  // namespace

std::vector<uint8_t> pcm16_wav(const std::vector<int16_t>& samples, int channels, int rate) {
  const uint32_t data_bytes = uint32_t(samples.size() * 2);
  std::vector<uint8_t> out;
  for (const char c : std::string("RIFF")) out.push_back(uint8_t(c));
  put(out, 36 + data_bytes, 4);
  for (const char c : std::string("WAVEfmt ")) out.push_back(uint8_t(c));
  put(out, 16, 4);                             // fmt chunk size
  put(out, 1, 2);                              // PCM
  put(out, uint32_t(channels), 2);             // channels
  put(out, uint32_t(rate), 4);                 // sample rate
  put(out, uint32_t(rate * channels * 2), 4);  // bytes per second
  put(out, uint32_t(channels * 2), 2);         // block align
  put(out, 16, 2);                             // bits per sample
  for (const char c : std::string("data")) out.push_back(uint8_t(c));
  put(out, data_bytes, 4);
  for (const int16_t s : samples) put(out, uint16_t(s), 2);
  return out;
}

void write_pcm16_wav(const std::string& path, const std::vector<float>& samples, int rate) {
  std::vector<int16_t> pcm;
  for (const float x : samples)
    pcm.push_back(int16_t(std::lround(std::clamp(x, -1.0f, 32767.0f / 32768.0f) * 32768.0f)));
  write_bytes(path, pcm16_wav(pcm, 1, rate));
}

std::string write_tones(const std::string& folder, const std::string& name, int tracks, int rate,
                        double seconds) {
  const std::string manifest_path = folder + "/" + name + ".tsv";
  std::ofstream manifest(manifest_path);
  const auto samples = size_t(std::llround(seconds * rate));
  for (int track = 0; track < tracks; ++track) {
    std::vector<float> tone(samples);
    for (size_t i = 0; i < samples; ++i)
      tone[i] =
          0.3f * float(std::sin(2 * std::numbers::pi * (300.0 + 400.0 * track) * double(i) / rate));
    const std::string path = folder + "/" + name + "_" + std::to_string(track) + ".wav";
    write_pcm16_wav(path, tone, rate);
    manifest << path << "\t" << (track % 2 ? "rock" : "jazz") << "\n";
  }
  return manifest_path;
}

std::string write_tone_tracks(const std::string& folder, int tracks) {
  return write_tones(folder, "train", tracks, 16000, 1.0);
}

}  // namespace sonata::testing
