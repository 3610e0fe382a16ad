#pragma once
// How a loss folds its per-sample values into what it returns, as PyTorch's `reduction`.

namespace sonata {

enum class Reduction {
  none,  // one value per sample
  sum,   // their sum
  mean,  // their mean (each loss defines what it averages over)
};

}  // namespace sonata
