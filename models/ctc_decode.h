#pragma once
// Decoding a CTC model's output into label sequences, without a language model.
//
// log_probs [T, N, C]: per-frame log-probabilities over C classes (log_softmax output; the
// beam search's scores assume normalised rows, greedy decoding does not care). Any floating
// dtype, on any device: it is read on the host as f64, which every dtype converts to exactly
// (a CUDA tensor costs one device-to-host copy that waits). lengths: [N] i64 or i32 with each
// T_n in [0, T], or undefined for all T; frames t >= T_n of sample n are never read.
// A NaN in a read frame throws naming the sample and frame: it means the model diverged, and
// decoding it would print plausible-looking garbage.
//
// Label ids are returned as they index C, blank excluded; Vocabulary::decode (data/) turns
// them into text.
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/tensor.h"

namespace sonata {

// Best path: the argmax of every frame (the first of equal maxima, as torch.argmax), repeats
// merged, then blanks dropped. One list of ids per sample.
std::vector<std::vector<int64_t>> ctc_greedy_decode(const Tensor& log_probs,
                                                    const Tensor& lengths = {}, int64_t blank = 0);

struct CtcBeamOptions {
  int64_t blank = 0;
  int64_t beam_width = 16;  // prefixes kept after every frame
  // Classes whose log-probability in a frame is below this are not tried as extensions in
  // that frame (the frame's most probable class always is). -inf tries every class, and with
  // a beam as wide as the number of prefixes the search is then exact.
  double prune_log_prob = -std::numeric_limits<double>::infinity();
  int64_t nbest = 1;  // hypotheses returned per sample by ctc_beam_search_nbest
};

struct CtcHypothesis {
  std::vector<int64_t> ids;
  // log of the summed probability of every alignment (within the beam) that collapses to
  // ids; for exhaustive settings, log p(ids | x) under the CTC model.
  double log_prob = 0;
};

// Prefix beam search: every prefix carries the log-probability of its alignments ending in a
// blank and ending in its last label; a frame extends, repeats or closes each prefix, merges
// identical prefixes by log-sum-exp, and keeps the beam_width best. A repeated label needs
// an intervening blank ("aa" is a, blank, a; a, a is "a"). Ties are broken by the smaller id
// sequence, so results do not depend on hashing or sort stability. The best per sample.
std::vector<CtcHypothesis> ctc_beam_search(const Tensor& log_probs, const Tensor& lengths = {},
                                           const CtcBeamOptions& options = {});
// Up to options.nbest hypotheses per sample, best first (fewer when fewer prefixes exist).
std::vector<std::vector<CtcHypothesis>> ctc_beam_search_nbest(const Tensor& log_probs,
                                                              const Tensor& lengths = {},
                                                              const CtcBeamOptions& options = {});

}  // namespace sonata
