#include "tools/inference/track_vote.h"

#include <algorithm>

#include "base/error.h"

namespace sonata {

std::vector<ClassVotes> rank_by_slice_votes(const std::vector<double>& probabilities,
                                            int64_t classes) {
  SONATA_CHECK(classes > 0 && !probabilities.empty() && probabilities.size() % size_t(classes) == 0,
               "rank_by_slice_votes: ", probabilities.size(),
               " probabilities are not whole rows of ", classes, " classes");
  std::vector<ClassVotes> ranked(static_cast<size_t>(classes));
  for (int64_t c = 0; c < classes; ++c) ranked[size_t(c)].label = c;
  for (size_t row = 0; row < probabilities.size(); row += size_t(classes)) {
    const double* slice = probabilities.data() + row;
    ++ranked[size_t(std::max_element(slice, slice + classes) - slice)].votes;
    for (int64_t c = 0; c < classes; ++c) ranked[size_t(c)].probability_sum += slice[c];
  }
  // Stable: equal votes and sums keep the lower index first.
  std::stable_sort(ranked.begin(), ranked.end(), [](const ClassVotes& a, const ClassVotes& b) {
    return a.votes != b.votes ? a.votes > b.votes : a.probability_sum > b.probability_sum;
  });
  return ranked;
}

}  // namespace sonata
