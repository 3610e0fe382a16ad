// peers_probe: sonata's error rates and CTC decoders on inputs a Python check writes, so that
// tests/peers/ can hold them against jiwer and pyctcdecode (tests/peers/truths.py).
//   peers_probe error-rate PAIRS.jsonl
//     each line {"reference": "...", "hypothesis": "..."}; prints one JSON line per pair
//     (character and word edits and reference lengths, cer, wer), then {"corpus": ...}
//   peers_probe beam LOG_PROBS.npy [BEAM_WIDTH]
//     log_probs [T, N, C] (f32 or f64) after log_softmax, blank 0; prints one JSON line per
//     sample: the greedy ids, the beam search's best ids and its log-probability
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "data/text/error_rate.h"
#include "engine/io/npy.h"
#include "models/ctc_decode.h"

namespace {

nlohmann::json counts(const sonata::EditCounts& c) {
  return {{"edits", c.edits}, {"reference_length", c.reference_length}, {"rate", c.rate()}};
}

nlohmann::json rates(const sonata::ErrorRate& rate) {
  return {{"characters", counts(rate.characters())}, {"words", counts(rate.words())}};
}

int error_rate(const std::string& path) {
  std::ifstream in(path);
  SONATA_CHECK(in, "peers_probe: cannot read '", path, "'");
  sonata::ErrorRate corpus;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const nlohmann::json pair = nlohmann::json::parse(line, nullptr, false);
    SONATA_CHECK(pair.is_object() && pair.contains("reference") && pair.contains("hypothesis"),
                 "peers_probe: line ", number, " of '", path,
                 "' is not {\"reference\": ..., \"hypothesis\": ...}");
    sonata::ErrorRate one;
    one.add(pair["reference"].get<std::string>(), pair["hypothesis"].get<std::string>());
    corpus += one;
    std::cout << rates(one).dump() << "\n";
  }
  std::cout << nlohmann::json{{"corpus", rates(corpus)}}.dump() << "\n";
  return 0;
}

int beam(const std::string& path, int64_t width) {
  const sonata::Tensor log_probs = sonata::load_npy(path);
  SONATA_CHECK(log_probs.dim() == 3, "peers_probe: '", path, "' must be [T, N, C]");
  sonata::CtcBeamOptions options;
  options.beam_width = width;
  const auto greedy = sonata::ctc_greedy_decode(log_probs);
  const auto best = sonata::ctc_beam_search(log_probs, {}, options);
  for (size_t n = 0; n < best.size(); ++n) {
    std::cout << nlohmann::json{{"greedy", greedy[n]},
                                {"beam", best[n].ids},
                                {"log_prob", best[n].log_prob}}
                     .dump()
              << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string command = argc > 1 ? argv[1] : "";
    if (command == "error-rate" && argc == 3) return error_rate(argv[2]);
    if (command == "beam" && (argc == 3 || argc == 4))
      return beam(argv[2], argc == 4 ? std::stoll(argv[3]) : 16);
    std::fprintf(stderr,
                 "usage: peers_probe error-rate PAIRS.jsonl | beam LOG_PROBS.npy [WIDTH]\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "peers_probe: %s\n", e.what());
    return 1;
  }
}
