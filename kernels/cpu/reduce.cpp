#include "kernels/cpu/reduce.h"

#include <algorithm>
#include <cmath>

#include "base/nvtx.h"
#include "kernels/cpu/capability_region.h"
#include "kernels/cpu/dispatch.h"

SONATA_CPU_BEGIN
namespace {

template <typename A>
A combine(ReduceOp op, A acc, A value) {
  switch (op) {
    case ReduceOp::sum:
      return acc + value;
    // NaN wins, as in torch.max / torch.amax.
    case ReduceOp::max:
      return (value > acc || std::isnan(value)) && !std::isnan(acc) ? value : acc;
    case ReduceOp::min:
      return (value < acc || std::isnan(value)) && !std::isnan(acc) ? value : acc;
  }
  return acc;
}

}  // namespace

void reduce(ReduceOp op, DType dtype, const void* in, void* out, int64_t outer, int64_t n,
            int64_t inner) {
  SONATA_NVTX_RANGE("sonata::cpu::reduce");
  SONATA_CHECK(n > 0 || op == ReduceOp::sum, "max/min over an empty dimension");
  dispatch_f32_f64(dtype, "reduce", [&]<typename T>() {
    const T* src = static_cast<const T*>(in);
    T* dst = static_cast<T*>(out);
    const int64_t first = op == ReduceOp::sum ? 0 : 1;  // max and min start from row 0
    if (inner == 1) {
#pragma omp parallel for schedule(static) if (outer * n >= (1 << 15))
      for (int64_t o = 0; o < outer; ++o) {
        const T* row = src + o * n;
        double acc = op == ReduceOp::sum ? 0.0 : double(row[0]);
        for (int64_t r = first; r < n; ++r) acc = combine<double>(op, acc, double(row[r]));
        dst[o] = T(acc);
      }
      return;
    }
    // A strided reduction (over rows, e.g. a bias gradient summed over time and batch) reads
    // the rows in order, a block of columns at a time, each column accumulating in the same
    // order as before (bit for bit the same sums). Walking each column down its stride read
    // every cache line once per column in it: the DS2 step's eight such sums took 33 ms.
    constexpr int64_t kColumns = 128;  // 512 bytes of each row; blocks enough for the threads
    const int64_t blocks = (inner + kColumns - 1) / kColumns;
#pragma omp parallel for collapse(2) schedule(static) if (outer * inner * n >= (1 << 15))
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t block = 0; block < blocks; ++block) {
        const int64_t column0 = block * kColumns, width = std::min(kColumns, inner - column0);
        const T* base = src + o * n * inner + column0;
        double acc[kColumns];
        for (int64_t i = 0; i < width; ++i) acc[i] = op == ReduceOp::sum ? 0.0 : double(base[i]);
        for (int64_t r = first; r < n; ++r) {
          const T* row = base + r * inner;
          if (op == ReduceOp::sum) {
#pragma omp simd
            for (int64_t i = 0; i < width; ++i) acc[i] += double(row[i]);
          } else {
            for (int64_t i = 0; i < width; ++i)
              acc[i] = combine<double>(op, acc[i], double(row[i]));
          }
        }
        for (int64_t i = 0; i < width; ++i) dst[o * inner + column0 + i] = T(acc[i]);
      }
    }
  });
}

void max_with_index(DType dtype, const void* in, void* values, int64_t* indices, int64_t outer,
                    int64_t n, int64_t inner) {
  SONATA_NVTX_RANGE("sonata::cpu::max_with_index");
  SONATA_CHECK(n > 0, "max over an empty dimension");
  dispatch_f32_f64(dtype, "max_with_index", [&]<typename T>() {
    const T* src = static_cast<const T*>(in);
    T* dst = static_cast<T*>(values);
#pragma omp parallel for collapse(2) schedule(static) if (outer * inner * n >= (1 << 15))
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* row = src + o * n * inner + i;
        T best = row[0];
        int64_t best_at = 0;
        for (int64_t r = 1; r < n && !std::isnan(best); ++r) {
          const T value = row[r * inner];
          if (value > best || std::isnan(value)) {
            best = value;
            best_at = r;
          }
        }
        dst[o * inner + i] = best;
        indices[o * inner + i] = best_at;
      }
    }
  });
}

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

SONATA_CPU_DECLARE(reduce)
SONATA_CPU_DECLARE(max_with_index)

void reduce(ReduceOp op, DType dtype, const void* in, void* out, int64_t outer, int64_t n,
            int64_t inner) {
  SONATA_CPU_CALL(reduce)(op, dtype, in, out, outer, n, inner);
}

void max_with_index(DType dtype, const void* in, void* values, int64_t* indices, int64_t outer,
                    int64_t n, int64_t inner) {
  SONATA_CPU_CALL(max_with_index)(dtype, in, values, indices, outer, n, inner);
}

}  // namespace sonata::kernels::cpu
#endif
