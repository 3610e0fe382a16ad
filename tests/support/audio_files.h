#pragma once
// Files for tests that read audio: a per-process temporary folder and WAV files written byte
// by byte (known samples, no libsndfile involved, so a decoder test checks against
// arithmetic).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sonata::testing {

// A folder per test case and process (ctest runs test cases in parallel processes), removed
// with its files at the end of the test.
class TemporaryFolder {
 public:
  explicit TemporaryFolder(const std::string& name);
  ~TemporaryFolder();
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
void write_text(const std::string& path, const std::string& text);

// A canonical 44-byte-header PCM WAV, little-endian, interleaved 16-bit samples.
std::vector<uint8_t> pcm16_wav(const std::vector<int16_t>& samples, int channels, int rate);
// Mono samples in [-1, 1] rounded to 16 bits, as a WAV file.
void write_pcm16_wav(const std::string& path, const std::vector<float>& samples, int rate);

// `tracks` one-second 16 kHz tones of 300 + 400 k Hz (k = 0, 1, ...) in `folder`, labelled
// "jazz" (even k) and "rock" (odd k), and their classification manifest folder/train.tsv
// (returned): a tiny genre set for the vgg19_bn trainer.
std::string write_tone_tracks(const std::string& folder, int tracks);

// The same tones (labels, frequencies), `seconds` long at `rate` Hz, as
// folder/<name>_<k>.wav, with their manifest folder/<name>.tsv (returned).
std::string write_tones(const std::string& folder, const std::string& name, int tracks, int rate,
                        double seconds);

}  // namespace sonata::testing
