#pragma once
// Parameter initialisers with torch.nn.init's formulas, drawn from the default generator.
#include "engine/tensor.h"

namespace sonata {

// torch's default for Linear and Conv weights and biases: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
// (kaiming_uniform with a = sqrt(5) reduces to this bound for the weight).
Tensor default_uniform_init(const Shape& shape, int64_t fan_in);
// kaiming_normal_(mode="fan_out", nonlinearity="relu"): N(0, 2 / fan_out).
void kaiming_normal_fan_out_(Tensor& weight);
void normal_init_(Tensor& t, double mean, double std);
void constant_init_(Tensor& t, double value);

}  // namespace sonata
