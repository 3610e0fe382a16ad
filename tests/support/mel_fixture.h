#pragma once
// The torchaudio mel fixtures (tests/fixtures/make_mel.py, tests/fixtures/mel/<name>.txt),
// read the same way by the CPU tests (tests/data/test_mel.cpp) and the CUDA parity tests
// (tests/cuda/test_cuda_mel.cpp): the config each case was made with, its float64 values,
// and the one waveform every case cuts its clip from.
#include <cstdint>
#include <string>
#include <vector>

#include "data/features/feature_config.h"
#include "engine/tensor.h"
#include "tests/support/text_fixture.h"

namespace sonata::testing {

// tests/fixtures/mel/<name>.txt; fails the running test if it cannot be opened.
TextFixture read_mel_fixture(const std::string& name);

// The first value under `key`, as written, as an integer, as a double.
std::string fixture_word(const TextFixture& fixture, const std::string& key);
int64_t fixture_integer(const TextFixture& fixture, const std::string& key);
double fixture_number(const TextFixture& fixture, const std::string& key);

// The shared waveform: 16-bit integers q, the clip is q / 32768 (exact in float). Each case
// uses its first `length` samples.
const std::vector<float>& mel_fixture_waveform();

// The FeatureConfig a case was made with (its sample_rate, n_fft, ..., log and top_db).
FeatureConfig mel_fixture_config(const TextFixture& fixture);
// The case's values, f64 of the case's shape.
Tensor mel_fixture_values(const TextFixture& fixture);

// Undoes the log of log_mel values under `config` (exp, or 10^(x/10) for dB): the mel power
// they came from, in f64, so that loud bins are compared on the power and not only the log.
Tensor unlog_mel(const Tensor& values, const FeatureConfig& config);

}  // namespace sonata::testing
