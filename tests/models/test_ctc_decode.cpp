// CTC greedy and prefix beam search decoding against an independent truth: for tiny T and C,
// every one of the C^T alignments is enumerated, collapsed and its probability summed per
// labelling, so the exact beam search must return each labelling's summed probability and
// the best one. Greedy decoding is checked against the per-frame argmax path collapsed here.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "base/error.h"
#include "engine/tensor.h"
#include "models/ctc_decode.h"

using namespace sonata;
using Catch::Contains;

namespace {

using Labelling = std::vector<int64_t>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Merge repeats, then drop blanks: the definition of the CTC collapse.
Labelling collapse(const std::vector<int64_t>& path, int64_t blank) {
  Labelling out;
  for (size_t t = 0; t < path.size(); ++t)
    if (path[t] != blank && (t == 0 || path[t - 1] != path[t])) out.push_back(path[t]);
  return out;
}

// log_probs [T, N, C] as a flat row-major list.
struct Case {
  int64_t frames, batch, classes;
  std::vector<double> values;

  double at(int64_t t, int64_t n, int64_t c) const {
    return values[size_t((t * batch + n) * classes + c)];
  }
  Tensor tensor() const {
    return from_vector(values, {frames, batch, classes}, TensorOptions{}.with(DType::f64));
  }
};

// Random rows normalised with a log-sum-exp written here, not the engine's log_softmax.
Case random_case(int64_t frames, int64_t batch, int64_t classes, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> logit(-2.5, 2.5);
  Case c{frames, batch, classes, std::vector<double>(size_t(frames * batch * classes))};
  for (int64_t row = 0; row < frames * batch; ++row) {
    double* scores = c.values.data() + row * classes;
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(scores[k] = logit(random));
    for (int64_t k = 0; k < classes; ++k) scores[k] -= std::log(sum);
  }
  return c;
}

// Summed probability of every labelling of sample n over its first `frames` frames.
std::map<Labelling, double> brute_force(const Case& c, int64_t n, int64_t frames, int64_t blank) {
  int64_t paths = 1;
  for (int64_t t = 0; t < frames; ++t) paths *= c.classes;
  std::map<Labelling, double> total;
  std::vector<int64_t> path(static_cast<size_t>(frames));
  for (int64_t index = 0; index < paths; ++index) {
    int64_t rest = index;
    double log_p = 0;
    for (int64_t t = 0; t < frames; ++t) {
      path[size_t(t)] = rest % c.classes;
      rest /= c.classes;
      log_p += c.at(t, n, path[size_t(t)]);
    }
    total[collapse(path, blank)] += std::exp(log_p);
  }
  return total;
}

Labelling argmax_path_collapsed(const Case& c, int64_t n, int64_t frames, int64_t blank) {
  std::vector<int64_t> path;
  for (int64_t t = 0; t < frames; ++t) {
    int64_t best = 0;
    for (int64_t k = 1; k < c.classes; ++k)
      if (c.at(t, n, k) > c.at(t, n, best)) best = k;
    path.push_back(best);
  }
  return collapse(path, blank);
}

// Sets every frame of sample n from `probabilities` (one row of C per frame).
void set_frames(Case& c, int64_t n, const std::vector<std::vector<double>>& probabilities) {
  for (size_t t = 0; t < probabilities.size(); ++t)
    for (int64_t k = 0; k < c.classes; ++k)
      c.values[size_t((int64_t(t) * c.batch + n) * c.classes + k)] =
          std::log(probabilities[t][size_t(k)]);
}

void check_exact_against_brute_force(const Case& c, const std::vector<int64_t>& lengths,
                                     int64_t blank) {
  CtcBeamOptions options;
  options.blank = blank;
  options.beam_width = 1000;  // wider than the number of prefixes: exact
  options.nbest = 1000;
  const Tensor lengths_tensor = from_vector(lengths, {c.batch});
  const auto nbest = ctc_beam_search_nbest(c.tensor(), lengths_tensor, options);
  const auto best = ctc_beam_search(c.tensor(), lengths_tensor, options);
  const auto greedy = ctc_greedy_decode(c.tensor(), lengths_tensor, blank);
  REQUIRE(nbest.size() == size_t(c.batch));
  for (int64_t n = 0; n < c.batch; ++n) {
    INFO("sample " << n << ", T_n " << lengths[size_t(n)] << ", blank " << blank);
    const auto truth = brute_force(c, n, lengths[size_t(n)], blank);
    // Every labelling with nonzero probability, each with its summed probability.
    REQUIRE(nbest[size_t(n)].size() == truth.size());
    for (const CtcHypothesis& hypothesis : nbest[size_t(n)]) {
      REQUIRE(truth.count(hypothesis.ids) == 1);
      CHECK(hypothesis.log_prob ==
            Approx(std::log(truth.at(hypothesis.ids))).epsilon(0).margin(1e-9));
    }
    // Best first, and the best is the most probable labelling.
    for (size_t k = 1; k < nbest[size_t(n)].size(); ++k)
      CHECK(nbest[size_t(n)][k - 1].log_prob >= nbest[size_t(n)][k].log_prob);
    auto most_probable = truth.begin();
    for (auto it = truth.begin(); it != truth.end(); ++it)
      if (it->second > most_probable->second) most_probable = it;
    CHECK(best[size_t(n)].ids == most_probable->first);
    CHECK(best[size_t(n)].log_prob ==
          Approx(std::log(most_probable->second)).epsilon(0).margin(1e-9));
    CHECK(greedy[size_t(n)] == argmax_path_collapsed(c, n, lengths[size_t(n)], blank));
  }
}

}  // namespace

TEST_CASE("ctc beam search equals the brute-force sum over alignments", "[ctc_decode]") {
  // T = 5, C = 3: 243 alignments per sample; ragged lengths, including 1 and 0.
  for (uint32_t seed = 0; seed < 6; ++seed) {
    INFO("seed " << seed);
    const Case c = random_case(5, 4, 3, 900 + seed);
    check_exact_against_brute_force(c, {5, 4, 1, 0}, 0);
    check_exact_against_brute_force(c, {3, 5, 5, 2}, 2);  // blank last
    check_exact_against_brute_force(c, {5, 5, 5, 5}, 1);  // blank in the middle
  }
  // Binary alphabet, longer: T = 5, C = 2.
  check_exact_against_brute_force(random_case(5, 2, 2, 77), {5, 3}, 0);
}

TEST_CASE("ctc greedy decoding collapses the argmax path", "[ctc_decode]") {
  // Argmax path a a _ a b b (blank 0, a 1, b 2) -> "a a b": the blank separates the a's.
  Case c{6, 2, 3, std::vector<double>(36)};
  const std::vector<double> a = {0.2, 0.6, 0.2}, b = {0.2, 0.2, 0.6}, blank = {0.6, 0.2, 0.2};
  set_frames(c, 0, {a, a, blank, a, b, b});
  set_frames(c, 1, {b, blank, blank, b, b, a});  // "b b a"
  const auto greedy = ctc_greedy_decode(c.tensor());
  CHECK(greedy[0] == Labelling{1, 1, 2});
  CHECK(greedy[1] == Labelling{2, 2, 1});
  // Ragged: sample 0 stops after a a _, sample 1 reads nothing.
  const auto ragged = ctc_greedy_decode(c.tensor(), from_vector(std::vector<int64_t>{3, 0}, {2}));
  CHECK(ragged[0] == Labelling{1});
  CHECK(ragged[1].empty());
  // Equal maxima go to the first class, as torch.argmax.
  Case tie{1, 1, 3, std::vector<double>(3)};
  set_frames(tie, 0, {{0.1, 0.45, 0.45}});
  CHECK(ctc_greedy_decode(tie.tensor())[0] == Labelling{1});
}

TEST_CASE("ctc beam search beats greedy when many paths share a labelling", "[ctc_decode]") {
  // Two frames, blank 0.6 and a 0.4 each. The best path is blank blank (0.36, ""), but "a"
  // collects a a + a _ + _ a = 0.16 + 0.24 + 0.24 = 0.64.
  Case c{2, 1, 2, {}};
  c.values.resize(4);
  set_frames(c, 0, {{0.6, 0.4}, {0.6, 0.4}});
  CHECK(ctc_greedy_decode(c.tensor())[0].empty());
  const auto beam = ctc_beam_search(c.tensor());
  CHECK(beam[0].ids == Labelling{1});
  CHECK(beam[0].log_prob == Approx(std::log(0.64)).epsilon(0).margin(1e-12));
  CtcBeamOptions options;
  options.nbest = 5;
  const auto nbest = ctc_beam_search_nbest(c.tensor(), {}, options);
  REQUIRE(nbest[0].size() == 2);  // only "a" and "" are possible
  CHECK(nbest[0][1].ids.empty());
  CHECK(nbest[0][1].log_prob == Approx(std::log(0.36)).epsilon(0).margin(1e-12));
}

TEST_CASE("ctc beam search: a repeated label needs a blank between", "[ctc_decode]") {
  const std::vector<double> a = {0.05, 0.9, 0.05}, blank = {0.9, 0.05, 0.05};
  Case c{3, 2, 3, std::vector<double>(18)};
  set_frames(c, 0, {a, blank, a});  // "aa"
  set_frames(c, 1, {a, a, a});      // "a"
  const auto beam = ctc_beam_search(c.tensor());
  CHECK(beam[0].ids == Labelling{1, 1});
  CHECK(beam[1].ids == Labelling{1});
}

TEST_CASE("ctc decoding never reads frames past a sample's length", "[ctc_decode]") {
  Case c = random_case(4, 3, 3, 31);
  const std::vector<int64_t> lengths = {4, 2, 0};
  const Case clean = c;
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t n = 0; n < 3; ++n)
      if (t >= lengths[size_t(n)])
        for (int64_t k = 0; k < 3; ++k) c.values[size_t((t * 3 + n) * 3 + k)] = kNaN;
  const Tensor lengths_tensor = from_vector(lengths, {3});
  const auto beam = ctc_beam_search(c.tensor(), lengths_tensor);
  const auto clean_beam = ctc_beam_search(clean.tensor(), lengths_tensor);
  const auto greedy = ctc_greedy_decode(c.tensor(), lengths_tensor);
  for (size_t n = 0; n < 3; ++n) {
    CHECK(beam[n].ids == clean_beam[n].ids);
    CHECK(beam[n].log_prob == clean_beam[n].log_prob);
  }
  CHECK(beam[2].ids.empty());
  CHECK(beam[2].log_prob == 0.0);  // the empty labelling is certain with no frames
  CHECK(greedy[2].empty());
}

TEST_CASE("ctc decoding accepts f32 log_probs and i32 lengths", "[ctc_decode]") {
  const Case c = random_case(5, 3, 3, 55);
  const Tensor lengths64 = from_vector(std::vector<int64_t>{5, 3, 4}, {3});
  const Tensor lengths32 = lengths64.to(DType::i32);
  const Tensor single = c.tensor().to(DType::f32);
  const auto reference = ctc_beam_search(c.tensor(), lengths64);
  const auto beam = ctc_beam_search(single, lengths32);
  const auto greedy = ctc_greedy_decode(single, lengths32);
  const auto greedy_reference = ctc_greedy_decode(c.tensor(), lengths64);
  for (size_t n = 0; n < 3; ++n) {
    CHECK(beam[n].ids == reference[n].ids);
    CHECK(beam[n].log_prob == Approx(reference[n].log_prob).epsilon(0).margin(1e-5));
    CHECK(greedy[n] == greedy_reference[n]);
  }
}

TEST_CASE("ctc beam search with a narrow beam and pruning on a peaky output", "[ctc_decode]") {
  // Peaky frames, as a trained model emits: narrow and pruned searches find the same answer.
  const std::vector<double> a = {0.02, 0.96, 0.02}, b = {0.02, 0.02, 0.96},
                            blank = {0.96, 0.02, 0.02};
  Case c{7, 1, 3, std::vector<double>(21)};
  set_frames(c, 0, {blank, a, a, blank, b, blank, a});  // "aba"
  CtcBeamOptions narrow;
  narrow.beam_width = 2;
  narrow.prune_log_prob = std::log(0.05);
  const auto pruned = ctc_beam_search(c.tensor(), {}, narrow);
  const auto exact = ctc_beam_search(c.tensor());
  CHECK(pruned[0].ids == Labelling{1, 2, 1});
  CHECK(exact[0].ids == Labelling{1, 2, 1});
  // Pruning only removes alignments, so the pruned probability is at most the exact one.
  CHECK(pruned[0].log_prob <= exact[0].log_prob + 1e-12);
  CHECK(ctc_greedy_decode(c.tensor())[0] == Labelling{1, 2, 1});
  // Beam width 1 keeps one prefix a frame and still returns a labelling.
  CtcBeamOptions single;
  single.beam_width = 1;
  CHECK(ctc_beam_search(c.tensor(), {}, single)[0].ids == Labelling{1, 2, 1});
}

TEST_CASE("ctc decoding names the bad input", "[ctc_decode]") {
  const Case c = random_case(3, 2, 3, 5);
  const Tensor lp = c.tensor();
  REQUIRE_THROWS_WITH(ctc_greedy_decode(lp, {}, 3), Contains("blank = 3 is outside the 3 classes"));
  CtcBeamOptions bad_blank;
  bad_blank.blank = -1;
  REQUIRE_THROWS_WITH(ctc_beam_search(lp, {}, bad_blank), Contains("blank = -1 is outside"));
  REQUIRE_THROWS_WITH(ctc_greedy_decode(lp.select(1, 0)),
                      Contains("log_probs must have shape [T, N, C]"));
  REQUIRE_THROWS_WITH(ctc_greedy_decode(from_vector(std::vector<int64_t>{1}, {1, 1, 1})),
                      Contains("log_probs must be a floating tensor"));
  REQUIRE_THROWS_WITH(ctc_beam_search(lp, from_vector(std::vector<int64_t>{3, 4}, {2})),
                      Contains("lengths[1] = 4 is outside [0, T = 3]"));
  REQUIRE_THROWS_WITH(ctc_beam_search(lp, from_vector(std::vector<int64_t>{3}, {1})),
                      Contains("lengths must have shape [2]"));
  REQUIRE_THROWS_WITH(ctc_greedy_decode(lp, lp.select(2, 0).select(0, 0)),
                      Contains("lengths must be an i64 or i32 tensor"));
  CtcBeamOptions no_beam;
  no_beam.beam_width = 0;
  REQUIRE_THROWS_WITH(ctc_beam_search(lp, {}, no_beam), Contains("beam_width = 0"));
  Case nan = c;
  nan.values[size_t((1 * 2 + 1) * 3 + 2)] = kNaN;
  REQUIRE_THROWS_WITH(ctc_beam_search(nan.tensor()), Contains("log_probs[1, 1, 2] is NaN"));
  REQUIRE_THROWS_WITH(ctc_greedy_decode(nan.tensor()), Contains("sample 1, frame 1"));
}
