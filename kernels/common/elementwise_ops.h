#pragma once
// The arithmetic of every elementwise op, written once for host and device. Values arrive
// as the compute type (double for f64, float for everything else) and leave the same way.
#include <cmath>
#include <cstdint>

#include "base/hd.h"

namespace sonata::kernels {

enum class UnaryOp : uint8_t {
  neg,
  exp,
  log,
  sqrt,
  rsqrt,
  abs,
  relu,
  sigmoid,
  tanh,
  pow,       // x^a
  hardtanh,  // clamp to [a, b]; gradient 0 outside the open interval
  clamp,     // clamp to [a, b]; gradient 1 on the closed interval
  affine,    // a*x + b (scalar add/mul, and the grad of sub/neg)
};

inline constexpr int kUnaryOpCount = int(UnaryOp::affine) + 1;

enum class BinaryOp : uint8_t { add, sub, mul, div, maximum, minimum };
inline constexpr int kBinaryOpCount = int(BinaryOp::minimum) + 1;
enum class CompareOp : uint8_t { eq, ne, lt, le, gt, ge };

template <typename C>
SONATA_HD C unary_apply(UnaryOp op, C x, C a, C b) {
  using std::exp, std::log, std::sqrt, std::tanh, std::pow;
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::exp:
      return exp(x);
    case UnaryOp::log:
      return log(x);
    case UnaryOp::sqrt:
      return sqrt(x);
    case UnaryOp::rsqrt:
      return C(1) / sqrt(x);
    case UnaryOp::abs:
      return x < C(0) ? -x : x;
    case UnaryOp::relu:
      return x < C(0) ? C(0) : x;  // ReLU(NaN) = NaN, as PyTorch's: a NaN stays visible
    case UnaryOp::sigmoid:
      return C(1) / (C(1) + exp(-x));
    case UnaryOp::tanh:
      return tanh(x);
    case UnaryOp::pow:
      return pow(x, a);
    case UnaryOp::hardtanh:
    case UnaryOp::clamp:
      return x < a ? a : (x > b ? b : x);
    case UnaryOp::affine:
      return a * x + b;
  }
  return x;
}

// d(op)/dx times the incoming gradient, from the input x and the output y.
template <typename C>
SONATA_HD C unary_grad(UnaryOp op, C grad, C x, C y, C a, C b) {
  using std::pow;
  switch (op) {
    case UnaryOp::neg:
      return -grad;
    case UnaryOp::exp:
      return grad * y;
    case UnaryOp::log:
      return grad / x;
    case UnaryOp::sqrt:
      return grad * C(0.5) / y;
    case UnaryOp::rsqrt:
      return grad * C(-0.5) * y * y * y;
    case UnaryOp::abs:
      return x > C(0) ? grad : (x < C(0) ? -grad : C(0));
    case UnaryOp::relu:
      return x > C(0) ? grad : C(0);
    case UnaryOp::sigmoid:
      return grad * y * (C(1) - y);
    case UnaryOp::tanh:
      return grad * (C(1) - y * y);
    case UnaryOp::pow:
      return a == C(0) ? C(0) : grad * a * pow(x, a - C(1));
    case UnaryOp::hardtanh:
      return (x > a && x < b) ? grad : C(0);
    case UnaryOp::clamp:
      return (x >= a && x <= b) ? grad : C(0);
    case UnaryOp::affine:
      return grad * a;
  }
  return grad;
}

template <typename C>
SONATA_HD C binary_apply(BinaryOp op, C x, C y) {
  switch (op) {
    case BinaryOp::add:
      return x + y;
    case BinaryOp::sub:
      return x - y;
    case BinaryOp::mul:
      return x * y;
    case BinaryOp::div:
      return x / y;
    case BinaryOp::maximum:
      return x > y || x != x ? x : y;  // NaN propagates
    case BinaryOp::minimum:
      return x < y || x != x ? x : y;
  }
  return x;
}

template <typename C>
SONATA_HD bool compare_apply(CompareOp op, C x, C y) {
  switch (op) {
    case CompareOp::eq:
      return x == y;
    case CompareOp::ne:
      return x != y;
    case CompareOp::lt:
      return x < y;
    case CompareOp::le:
      return x <= y;
    case CompareOp::gt:
      return x > y;
    case CompareOp::ge:
      return x >= y;
  }
  return false;
}

}  // namespace sonata::kernels
