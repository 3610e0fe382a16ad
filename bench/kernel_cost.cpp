#include "bench/kernel_cost.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace sonata::bench {
namespace {

constexpr double kF32 = 4, kI64 = 8;

}  // namespace

KernelCost gemm_cost(int64_t m, int64_t n, int64_t k, int64_t element_bytes, Pass pass) {
  const double e = double(element_bytes), mn = double(m) * n, mk = double(m) * k,
               kn = double(k) * n, mnk = mn * double(k);
  if (pass == Pass::forward) return {e * (mk + kn + mn), 2 * mnk};
  // Reads dC, A, B; writes dA, dB: two GEMMs of the forward's size.
  return {e * (mn + 2 * mk + 2 * kn), 4 * mnk};
}

int64_t ConvShape::p() const {
  return (h + 2 * padding - r) / stride + 1;
}
int64_t ConvShape::q() const {
  return (w + 2 * padding - s) / stride + 1;
}

KernelCost conv2d_cost(const ConvShape& shape, int64_t element_bytes, Pass pass) {
  const double e = double(element_bytes);
  const double x = double(shape.n) * shape.c * shape.h * shape.w;
  const double weight = double(shape.k) * shape.c * shape.r * shape.s;
  const double y = double(shape.n) * shape.k * shape.p() * shape.q();
  const double macs = y * double(shape.c) * shape.r * shape.s;
  if (pass == Pass::forward) return {e * (x + weight + y), 2 * macs};
  // Reads dy, x, w; writes dx, dw: the data and weight gradients, each a forward's work.
  return {e * (y + 2 * x + 2 * weight), 4 * macs};
}

KernelCost batch_norm_relu_cost(int64_t elements, int64_t channels, int64_t element_bytes,
                                Pass pass) {
  const double e = double(element_bytes), n = double(elements), c = double(channels);
  if (pass == Pass::forward) {
    // x in, y out; weight and bias read, running mean and var read and written.
    // Per element: sum and sum of squares (3), scale and shift (2), ReLU (1).
    return {e * 2 * n + kF32 * 6 * c, 6 * n};
  }
  // dy and x in (the ReLU mask follows from x and the statistics), dx out; weight read,
  // its gradient and the bias's written. Per element: x_hat (2), mask (1), sums of dy and
  // dy * x_hat (3), dx = k (dy - a - x_hat b) (4).
  return {e * 3 * n + kF32 * 3 * c, 10 * n};
}

KernelCost softmax_cross_entropy_cost(int64_t rows, int64_t classes, int64_t element_bytes,
                                      Pass pass) {
  const double e = double(element_bytes), logits = double(rows) * classes, r = double(rows);
  // Forward per logit: max (1), subtract, exp, sum (3); the loss is one f32.
  if (pass == Pass::forward) return {e * logits + kI64 * r + kF32, 4 * logits};
  // Logits and targets in, dlogits out; per logit: subtract, exp, scale (3).
  return {e * 2 * logits + kI64 * r, 3 * logits};
}

KernelCost lstm_step_cost(int64_t batch, int64_t input, int64_t hidden, int64_t element_bytes,
                          Pass pass) {
  const double e = double(element_bytes), nb = double(batch), i = double(input), h = double(hidden);
  const double weights = 4 * h * (i + h), biases = 2 * 4 * h;
  if (pass == Pass::forward) {
    // Weights, biases, x, h and c in; h and c out. The two GEMMs, the bias and gate sums
    // (2 per gate value), the four activations and c = f c + i g, h = o tanh(c) (9 per unit).
    return {e * (weights + biases + nb * i + 4 * nb * h),
            2 * nb * weights + 2 * nb * 4 * h + 9 * nb * h};
  }
  // Weights, x, h, c and dh in; weight and bias gradients, dx, dh_prev and dc_prev out.
  // Four GEMMs (dx, dh_prev and both weight gradients), the cell's backward (about 20 per
  // unit) and the bias gradients (a sum over the batch of each gate gradient, twice).
  return {e * (2 * weights + biases + 2 * nb * i + 5 * nb * h),
          4 * nb * weights + 20 * nb * h + 2 * nb * 4 * h};
}

KernelCost ctc_cost(int64_t frames, int64_t batch, int64_t classes, int64_t target_length,
                    Pass pass) {
  const double probs = double(frames) * batch * classes;
  const double cells = double(frames) * batch * double(2 * target_length + 1);
  const double targets = kI64 * double(batch) * double(target_length);
  // Each cell of the alpha (forward) or beta (backward) recursion: a log-sum-exp of up to
  // three predecessors plus the emission, about 8 operations.
  if (pass == Pass::forward) return {kF32 * probs + targets + kF32 * batch, 8 * cells};
  // The beta recursion, alpha + beta per cell (1), a log-sum-exp per (t, n, class) over its
  // cells (about 2 per cell), and exp(lp) - posterior times the loss's gradient (3 per
  // log-probability).
  return {kF32 * 2 * probs + targets, 11 * cells + 3 * probs};
}

KernelCost adamw_cost(int64_t elements) {
  // p *= 1 - lr wd (1); m and v updates (3 + 4); sqrt(v / bc2) + eps (3); p -= s m / d (3).
  const double n = double(elements);
  return {kF32 * 7 * n, 14 * n};
}

double floor_ms(const KernelCost& cost, const Ceilings& ceilings) {
  SONATA_CHECK(ceilings.copy_gbps > 0 && ceilings.gemm_tflops > 0,
               "bench_kernels: the measured ceilings must be positive");
  return std::max(cost.bytes / (ceilings.copy_gbps * 1e9),
                  cost.flops / (ceilings.gemm_tflops * 1e12)) *
         1e3;
}

int rotation_sets(double set_bytes, double rotate_bytes, int min_sets) {
  SONATA_CHECK(set_bytes > 0 && min_sets > 0,
               "bench_kernels: an input set must have bytes and at least one set is needed");
  const double needed = std::ceil(rotate_bytes / set_bytes);
  return int(std::clamp(needed, double(min_sets), std::max(64.0, double(min_sets))));
}

}  // namespace sonata::bench
