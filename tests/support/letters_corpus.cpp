#include "tests/support/letters_corpus.h"

#include <cmath>
#include <filesystem>
#include <numbers>

#include "tests/support/audio_files.h"

namespace sonata::testing {

std::vector<float> letters_audio(const std::string& text, std::mt19937& generator) {
  std::normal_distribution<float> noise(0.0f, 0.01f);
  std::vector<float> samples(size_t(kLettersRate / 10), 0.0f);  // 0.1 s of lead-in
  for (const char letter : text) {
    const double hz = letter == 'a' ? 400.0 : letter == 'b' ? 1200.0 : 2800.0;
    for (int i = 0; i < kLettersRate / 4; ++i)
      samples.push_back(0.4f * float(std::sin(2 * std::numbers::pi * hz * i / kLettersRate)));
    samples.insert(samples.end(), size_t(kLettersRate / 20), 0.0f);
  }
  samples.insert(samples.end(), size_t(kLettersRate / 10), 0.0f);
  for (float& x : samples) x += noise(generator);
  return samples;
}

std::string write_letters_corpus(const std::string& folder, const std::string& name, int count,
                                 unsigned seed) {
  std::mt19937 generator(seed);
  std::string manifest;
  for (int i = 0; i < count; ++i) {
    std::string text;
    const int letters = 1 + int(generator() % 3);
    for (int k = 0; k < letters; ++k) text += char('a' + generator() % 3);
    const std::string wav = name + "_" + std::to_string(i) + ".wav";
    write_pcm16_wav((std::filesystem::path(folder) / wav).string(), letters_audio(text, generator),
                    kLettersRate);
    manifest += wav + "\t" + text + "\n";
  }
  const std::string path = (std::filesystem::path(folder) / (name + ".tsv")).string();
  write_text(path, manifest);
  return path;
}

}  // namespace sonata::testing
