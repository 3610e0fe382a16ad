#pragma once
// A track's classes ranked from its slices' probabilities, by the rule the trainer's track
// accuracy uses (train/tasks/class_task.cpp): each slice votes for its most probable class
// (the first of equal maxima); more votes rank higher, equal votes go to the larger summed
// probability, then to the lower class index.
#include <cstdint>
#include <vector>

namespace sonata {

struct ClassVotes {
  int64_t label = 0;  // class index
  int64_t votes = 0;  // slices whose most probable class this is
  double probability_sum = 0;
};

// `probabilities`: [slices, classes] row-major, each row a slice's softmax. Every class is
// returned, best first. Throws on an empty or ragged input.
std::vector<ClassVotes> rank_by_slice_votes(const std::vector<double>& probabilities,
                                            int64_t classes);

}  // namespace sonata
