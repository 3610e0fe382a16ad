#pragma once
// Layers without parameters, named as torch.nn's so model definitions read alike.
#include <array>

#include "engine/nn/module.h"

namespace sonata {

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
};

class Hardtanh : public Module {
 public:
  Hardtanh(double min_value = -1.0, double max_value = 1.0) : min_(min_value), max_(max_value) {}
  Tensor forward(const Tensor& x) override;

 private:
  double min_, max_;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5) : p_(p) {}
  Tensor forward(const Tensor& x) override;

 private:
  double p_;
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : start_(start_dim), end_(end_dim) {}
  Tensor forward(const Tensor& x) override;

 private:
  int64_t start_, end_;
};

class MaxPool2d : public Module {
 public:
  MaxPool2d(std::array<int64_t, 2> kernel_size, std::array<int64_t, 2> stride,
            std::array<int64_t, 2> padding = {0, 0})
      : kernel_(kernel_size), stride_(stride), padding_(padding) {}
  Tensor forward(const Tensor& x) override;

 private:
  std::array<int64_t, 2> kernel_, stride_, padding_;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(std::array<int64_t, 2> output_size) : output_size_(output_size) {}
  Tensor forward(const Tensor& x) override;

 private:
  std::array<int64_t, 2> output_size_;
};

}  // namespace sonata
