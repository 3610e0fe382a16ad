#pragma once
// A speech corpus small enough for unit tests: tones standing for letters ("a" a 400 Hz tone,
// "b" 1200 Hz, "c" 2800 Hz, 0.25 s each with 0.05 s gaps, light noise), so a tiny DS2 learns
// it in a few dozen steps.
#include <random>
#include <string>
#include <vector>

namespace sonata::testing {

constexpr int kLettersRate = 16000;

std::vector<float> letters_audio(const std::string& text, std::mt19937& generator);
// `count` clips of 1 to 3 letters from {a, b, c} as WAV files in `folder`, and their TSV
// manifest (folder/name.tsv, returned). The same seed gives the same files.
std::string write_letters_corpus(const std::string& folder, const std::string& name, int count,
                                 unsigned seed);

}  // namespace sonata::testing
