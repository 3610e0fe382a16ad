#include "models/ctc_decode.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "base/error.h"

namespace sonata {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// log_probs read on the host, with each sample's frame count.
struct Frames {
  std::vector<double> values;  // [T, N, C] row-major
  int64_t frames = 0, batch = 0, classes = 0;
  std::vector<int64_t> lengths;

  // Sample n's scores at frame t; a NaN throws naming both.
  const double* row(const char* op, int64_t t, int64_t n) const {
    const double* scores = values.data() + (t * batch + n) * classes;
    for (int64_t c = 0; c < classes; ++c)
      SONATA_CHECK(!std::isnan(scores[c]), op, ": log_probs[", t, ", ", n, ", ", c,
                   "] is NaN (sample ", n, ", frame ", t, "): the model's output is not finite");
    return scores;
  }
};

Frames read_frames(const char* op, const Tensor& log_probs, const Tensor& lengths, int64_t blank) {
  SONATA_CHECK(log_probs.defined(), op, ": log_probs is undefined");
  SONATA_CHECK(is_floating(log_probs.dtype()), op, ": log_probs must be a floating tensor, got ",
               dtype_name(log_probs.dtype()));
  SONATA_CHECK(log_probs.dim() == 3, op, ": log_probs must have shape [T, N, C], got ",
               shape_str(log_probs.shape()));
  Frames f;
  f.frames = log_probs.size(0), f.batch = log_probs.size(1), f.classes = log_probs.size(2);
  SONATA_CHECK(blank >= 0 && blank < f.classes, op, ": blank = ", blank, " is outside the ",
               f.classes, " classes of log_probs");
  f.values = log_probs.detach().to_vector<double>();
  if (!lengths.defined()) {
    f.lengths.assign(size_t(f.batch), f.frames);
    return f;
  }
  SONATA_CHECK(lengths.dtype() == DType::i64 || lengths.dtype() == DType::i32, op,
               ": lengths must be an i64 or i32 tensor, got ", dtype_name(lengths.dtype()));
  SONATA_CHECK(lengths.dim() == 1 && lengths.size(0) == f.batch, op, ": lengths must have shape [",
               f.batch, "] (one per sample of log_probs), got ", shape_str(lengths.shape()));
  f.lengths = lengths.to_vector<int64_t>();
  for (int64_t n = 0; n < f.batch; ++n)
    SONATA_CHECK(f.lengths[size_t(n)] >= 0 && f.lengths[size_t(n)] <= f.frames, op, ": lengths[", n,
                 "] = ", f.lengths[size_t(n)], " is outside [0, T = ", f.frames, "]");
  return f;
}

int64_t argmax(const double* scores, int64_t classes) {
  return int64_t(std::max_element(scores, scores + classes) - scores);
}

double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double high = std::max(a, b);
  return high + std::log1p(std::exp(std::min(a, b) - high));
}

// Prefixes as the nodes of a trie, so that the same prefix reached from two beams is the
// same node, which is what merges them. A frame's extensions are first scored under a
// candidate key and become nodes only if they survive the cut, so the trie grows by at most
// beam_width nodes a frame rather than beam_width * C.
class PrefixTrie {
 public:
  static constexpr int64_t kRoot = 0;  // the empty prefix

  explicit PrefixTrie(int64_t classes) : classes_(classes) { nodes_.push_back({-1, -1}); }

  // A candidate's key: the node of `node` + label when it exists, else -1 - (node * C + label).
  int64_t extension_key(int64_t node, int64_t label) const {
    const auto found = children_.find(node * classes_ + label);
    return found != children_.end() ? found->second : -1 - (node * classes_ + label);
  }
  // The node of a candidate key, created if needed.
  int64_t node_of(int64_t key) {
    if (key >= 0) return key;
    const int64_t parent = (-1 - key) / classes_, label = (-1 - key) % classes_;
    const int64_t node = int64_t(nodes_.size());
    nodes_.push_back({parent, label});
    children_.emplace(parent * classes_ + label, node);
    return node;
  }
  int64_t last_label(int64_t node) const { return nodes_[size_t(node)].label; }
  std::vector<int64_t> ids(int64_t key) const {
    std::vector<int64_t> out;
    int64_t node = key;
    if (key < 0) {
      out.push_back((-1 - key) % classes_);
      node = (-1 - key) / classes_;
    }
    for (; node != kRoot; node = nodes_[size_t(node)].parent)
      out.push_back(nodes_[size_t(node)].label);
    std::reverse(out.begin(), out.end());
    return out;
  }

 private:
  struct Node {
    int64_t parent, label;
  };
  int64_t classes_;
  std::vector<Node> nodes_;
  std::unordered_map<int64_t, int64_t> children_;  // parent * C + label -> node
};

// Log-probabilities of a prefix's alignments so far, split by how they end.
struct PrefixScores {
  double blank = kNegInf, label = kNegInf;
  double total() const { return log_add(blank, label); }
};

struct Ranked {
  int64_t node;  // a candidate key until best_prefixes turns it into a node
  PrefixScores scores;
  double total;
};

// The `keep` best candidates by total probability, best first, as trie nodes; equal totals
// go by the smaller id sequence. Candidates of probability 0 are dropped.
std::vector<Ranked> best_prefixes(const std::unordered_map<int64_t, PrefixScores>& candidates,
                                  PrefixTrie& trie, int64_t keep) {
  std::vector<Ranked> ranked;
  ranked.reserve(candidates.size());
  for (const auto& [key, scores] : candidates)
    if (scores.total() != kNegInf) ranked.push_back({key, scores, scores.total()});
  auto better = [&](const Ranked& a, const Ranked& b) {
    if (a.total != b.total) return a.total > b.total;
    return trie.ids(a.node) < trie.ids(b.node);
  };
  const size_t kept = std::min(ranked.size(), size_t(keep));
  std::partial_sort(ranked.begin(), ranked.begin() + std::ptrdiff_t(kept), ranked.end(), better);
  ranked.resize(kept);
  for (Ranked& prefix : ranked) prefix.node = trie.node_of(prefix.node);
  return ranked;
}

std::vector<CtcHypothesis> search_sample(const char* op, const Frames& f, int64_t n,
                                         const CtcBeamOptions& options) {
  PrefixTrie trie(f.classes);
  std::unordered_map<int64_t, PrefixScores> next;
  std::vector<Ranked> beam = {{PrefixTrie::kRoot, {0.0, kNegInf}, 0.0}};
  std::vector<int64_t> labels;
  for (int64_t t = 0; t < f.lengths[size_t(n)]; ++t) {
    const double* scores = f.row(op, t, n);
    const int64_t top = argmax(scores, f.classes);
    labels.clear();
    for (int64_t c = 0; c < f.classes; ++c)
      if (scores[c] >= options.prune_log_prob || c == top) labels.push_back(c);
    next.clear();
    for (const Ranked& prefix : beam) {
      const PrefixScores& s = prefix.scores;
      for (const int64_t c : labels) {
        if (c == options.blank) {
          // Any alignment may close with a blank; the prefix is unchanged.
          PrefixScores& same = next[prefix.node];
          same.blank = log_add(same.blank, prefix.total + scores[c]);
        } else if (c == trie.last_label(prefix.node)) {
          // The same label again merges into it, unless a blank came between: only
          // alignments ending in a blank start a new copy of the label.
          PrefixScores& same = next[prefix.node];
          same.label = log_add(same.label, s.label + scores[c]);
          PrefixScores& longer = next[trie.extension_key(prefix.node, c)];
          longer.label = log_add(longer.label, s.blank + scores[c]);
        } else {
          PrefixScores& longer = next[trie.extension_key(prefix.node, c)];
          longer.label = log_add(longer.label, prefix.total + scores[c]);
        }
      }
    }
    beam = best_prefixes(next, trie, options.beam_width);
  }
  std::vector<CtcHypothesis> out;
  for (const Ranked& prefix : beam) {
    if (int64_t(out.size()) == options.nbest) break;
    out.push_back({trie.ids(prefix.node), prefix.total});
  }
  // Every alignment had probability 0 (rows of -inf): report the empty labelling as such.
  if (out.empty()) out.push_back({{}, kNegInf});
  return out;
}

}  // namespace

std::vector<std::vector<int64_t>> ctc_greedy_decode(const Tensor& log_probs, const Tensor& lengths,
                                                    int64_t blank) {
  const char* op = "ctc_greedy_decode";
  const Frames f = read_frames(op, log_probs, lengths, blank);
  std::vector<std::vector<int64_t>> out(size_t(f.batch));
  for (int64_t n = 0; n < f.batch; ++n) {
    int64_t previous = -1;
    for (int64_t t = 0; t < f.lengths[size_t(n)]; ++t) {
      const int64_t best = argmax(f.row(op, t, n), f.classes);
      if (best != blank && best != previous) out[size_t(n)].push_back(best);
      previous = best;
    }
  }
  return out;
}

std::vector<std::vector<CtcHypothesis>> ctc_beam_search_nbest(const Tensor& log_probs,
                                                              const Tensor& lengths,
                                                              const CtcBeamOptions& options) {
  const char* op = "ctc_beam_search";
  SONATA_CHECK(options.beam_width >= 1, op, ": beam_width = ", options.beam_width,
               " must be at least 1");
  SONATA_CHECK(options.nbest >= 1, op, ": nbest = ", options.nbest, " must be at least 1");
  SONATA_CHECK(!std::isnan(options.prune_log_prob), op, ": prune_log_prob is NaN");
  const Frames f = read_frames(op, log_probs, lengths, options.blank);
  std::vector<std::vector<CtcHypothesis>> out;
  out.reserve(size_t(f.batch));
  for (int64_t n = 0; n < f.batch; ++n) out.push_back(search_sample(op, f, n, options));
  return out;
}

std::vector<CtcHypothesis> ctc_beam_search(const Tensor& log_probs, const Tensor& lengths,
                                           const CtcBeamOptions& options) {
  CtcBeamOptions best_only = options;
  best_only.nbest = 1;
  std::vector<CtcHypothesis> out;
  for (auto& hypotheses : ctc_beam_search_nbest(log_probs, lengths, best_only))
    out.push_back(std::move(hypotheses.front()));
  return out;
}

}  // namespace sonata
