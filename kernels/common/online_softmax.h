#pragma once
// The max and the sum of exp(x - max) of a line in one read (Milakov and Gimelshein's online
// normaliser): a running state rescales its sum when the max grows, and two states merge the
// same way. The CUDA softmax and cross-entropy (kernels/cuda/online_softmax.cuh adds the warp
// shuffle) then need one read for the statistics instead of two. Host and device alike, so
// the CPU tests check it against the two-pass sums.
//
// Special values give what the two-pass form gives: a NaN anywhere makes the sum NaN (the max
// skips it, like fmax); +inf makes the sum NaN (exp(inf - inf)); a line of -inf keeps max
// -inf and sum 0.
#include <cmath>
#include <limits>

#include "base/hd.h"

namespace sonata::kernels {

// No default member initialisers: the CUDA allreduces keep these in __shared__ arrays.
template <typename C>
struct MaxSum {
  C max, sum;

  SONATA_HD static MaxSum empty() { return {-std::numeric_limits<C>::infinity(), C(0)}; }

  SONATA_HD void add(C x) {
    using std::exp;
    if (x > max) {
      // exp(x - x): 1, or NaN for x = +inf, as in the two-pass sum.
      const C self =
          x == std::numeric_limits<C>::infinity() ? std::numeric_limits<C>::quiet_NaN() : C(1);
      sum = sum * exp(max - x) + self;
      max = x;
    } else if (x != -std::numeric_limits<C>::infinity()) {
      sum += exp(x - max);  // a NaN x lands here: the sum turns NaN whatever max is
    }
  }
};

// s.sum * exp(s.max - to), where an empty state (sum 0) adds nothing even when both maxima
// are -inf and exp(-inf - -inf) would be NaN.
template <typename C>
SONATA_HD C rescaled_sum(const MaxSum<C>& s, C to) {
  using std::exp;
  return s.sum == C(0) ? C(0) : s.sum * exp(s.max - to);
}

// Commutative bit for bit (fmax, and + of the same two products), so a butterfly leaves every
// lane with the same state. Maxima are never NaN (add skips NaN), so fmax loses nothing.
template <typename C>
struct MergeMaxSum {
  SONATA_HD MaxSum<C> operator()(const MaxSum<C>& a, const MaxSum<C>& b) const {
    using std::fmax;
    const C max = fmax(a.max, b.max);
    return {max, rescaled_sum(a, max) + rescaled_sum(b, max)};
  }
};

}  // namespace sonata::kernels
