#include "kernels/cpu/gemm_skinny.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/cpu/capability_region.h"

SONATA_CPU_BEGIN
namespace {

// Below this many multiply-adds a single thread is faster than waking the others.
constexpr int64_t kParallelWork = int64_t(1) << 18;

template <typename T>
T a_at(const GemmShape& s, const T* a, int64_t i, int64_t p) {
  return s.trans_a ? a[p * s.lda + i] : a[i * s.lda + p];
}

// C row segment = beta * C row segment (never read when beta is 0, as BLAS).
template <typename T>
void scale_row(T* row, int64_t count, T beta) {
  if (beta == T(0)) {
    std::fill(row, row + count, T(0));
  } else if (beta != T(1)) {
    for (int64_t j = 0; j < count; ++j) row[j] *= beta;
  }
}

// Rows and columns of C one register tile holds through the whole k loop: 8 x 32 floats
// are 16 AVX-512 registers, leaving room for B's row and A's broadcasts. (The previous
// form added each row of B into C in memory, two L1 accesses per multiply-add: the LSTM
// step's [8 x 256] x [256 x 1024] ran at half this speed.) AVX2 has 16 registers of 8
// floats: 6 x 16 floats are 12 of them (the packed sgemm's AVX2 tile; not yet timed here).
#if SONATA_CPU_CAPABILITY == 1
constexpr int64_t kTileRows = 6;
constexpr int64_t kTileColumns = 16;
#else
constexpr int64_t kTileRows = 8;
constexpr int64_t kTileColumns = 32;
#endif

// Rows of B per pass over a thread's tiles (few_rows) when B is larger than kStreamedB: 16
// rows of a [25088, 4096] B are 256 KiB per thread, read along their rows (8 to 256
// measured, 16 the fastest). A B that caches keeps the whole depth in one pass: blocking the
// LSTM step's [256, 1024] made its forward 0.31 -> 0.35 ms and a DS2 step 6 % slower.
constexpr int64_t kStreamedDepthBlock = 16;
constexpr int64_t kStreamedB = int64_t(4) << 20;  // bytes

// C[kRows, kTileColumns] = beta * C + A_rows B over k, accumulated in registers. `a_rows`
// is [kRows x k] with leading dimension lda (alpha applied); `b` points at B(0, j0).
template <typename T, int64_t kRows>
void register_tile(int64_t k, const T* a_rows, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
                   int64_t ldc) {
  T sums[kRows][kTileColumns] = {};
  for (int64_t p = 0; p < k; ++p) {
    const T* b_row = b + p * ldb;
    for (int64_t i = 0; i < kRows; ++i) {
      const T a_ip = a_rows[i * lda + p];
#pragma omp simd
      for (int64_t j = 0; j < kTileColumns; ++j) sums[i][j] += a_ip * b_row[j];
    }
  }
  for (int64_t i = 0; i < kRows; ++i) {
    T* c_row = c + i * ldc;
    if (beta == T(0)) {
      for (int64_t j = 0; j < kTileColumns; ++j) c_row[j] = sums[i][j];
    } else {
      for (int64_t j = 0; j < kTileColumns; ++j) c_row[j] = beta * c_row[j] + sums[i][j];
    }
  }
}

// body(std::integral_constant<int64_t, rows>{}) for rows in [1, 8]: the register tiles'
// row counts are compile-time, so that their accumulators stay in registers.
template <typename Body>
void with_row_count(int64_t rows, Body body) {
  switch (rows) {
    case 8:
      return body(std::integral_constant<int64_t, 8>{});
    case 7:
      return body(std::integral_constant<int64_t, 7>{});
    case 6:
      return body(std::integral_constant<int64_t, 6>{});
    case 5:
      return body(std::integral_constant<int64_t, 5>{});
    case 4:
      return body(std::integral_constant<int64_t, 4>{});
    case 3:
      return body(std::integral_constant<int64_t, 3>{});
    case 2:
      return body(std::integral_constant<int64_t, 2>{});
    default:
      return body(std::integral_constant<int64_t, 1>{});
  }
}

// Rows of A per dot tile (both instruction sets: 16 accumulators fit AVX-512's 32 registers,
// and AVX2 spills some, still ahead of a reduction per dot product).
constexpr int64_t kDotRows = 8;

// dots[i][jj] = A row i . b_jj over k, for kRows rows of A (leading dimension lda) and two
// rows of B: 2 x kRows accumulators of a 64-byte vector's lanes each (16 zmm registers for
// 8 rows of floats), reduced across lanes once at the end.
template <typename T, int64_t kRows>
void dot_tile(int64_t k, const T* a_rows, int64_t lda, const T* b0, const T* b1,
              T (&dots)[kDotRows][2]) {
  constexpr int64_t kLanes = int64_t(64 / sizeof(T));
  T acc0[kRows][kLanes] = {}, acc1[kRows][kLanes] = {};
  int64_t p = 0;
  for (; p + kLanes <= k; p += kLanes) {
    for (int64_t i = 0; i < kRows; ++i) {
      const T* a = a_rows + i * lda + p;
#pragma omp simd
      for (int64_t l = 0; l < kLanes; ++l) {
        acc0[i][l] += a[l] * b0[p + l];
        acc1[i][l] += a[l] * b1[p + l];
      }
    }
  }
  for (int64_t i = 0; i < kRows; ++i) {
    T sum0 = 0, sum1 = 0;
    for (int64_t l = 0; l < kLanes; ++l) sum0 += acc0[i][l], sum1 += acc1[i][l];
    for (int64_t q = p; q < k; ++q) {
      sum0 += a_rows[i * lda + q] * b0[q];
      sum1 += a_rows[i * lda + q] * b1[q];
    }
    dots[i][0] = sum0;
    dots[i][1] = sum1;
  }
}

// m <= kSkinny. A is gathered, scaled by alpha, into a dense [m x k] copy first.
template <typename T>
void few_rows(const GemmShape& s, T alpha, const T* a, const T* b, T beta, T* c) {
  std::vector<T> a_rows(size_t(s.m * s.k));
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t p = 0; p < s.k; ++p) a_rows[size_t(i * s.k + p)] = alpha * a_at(s, a, i, p);
  const bool parallel = s.m * s.n * s.k >= kParallelWork;
  if (s.trans_b) {
    // B(p, j) = b[j * ldb + p]: each output is a dot product of two contiguous rows, taken
    // for up to 8 rows of A and two columns at once in vector accumulators, reduced once at
    // the end (one reduction per dot product of a block cost as much as the block: VGG's
    // classifier, [8, 25088] x [25088, 4096]^T, took 57 ms).
    const int64_t pairs = (s.n + 1) / 2;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t pair = 0; pair < pairs; ++pair) {
      const int64_t j = 2 * pair;
      const T* b0 = b + j * s.ldb;
      const T* b1 = j + 1 < s.n ? b0 + s.ldb : b0;  // an odd n computes its last column twice
      for (int64_t i0 = 0; i0 < s.m; i0 += kDotRows) {
        T dots[kDotRows][2];
        const int64_t rows = std::min(kDotRows, s.m - i0);
        with_row_count(rows, [&](auto count) {
          dot_tile<T, count()>(s.k, a_rows.data() + i0 * s.k, s.k, b0, b1, dots);
        });
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t jj = 0; jj < 2 && j + jj < s.n; ++jj) {
            T& out = c[(i0 + i) * s.ldc + j + jj];
            out = beta == T(0) ? dots[i][jj] : beta * out + dots[i][jj];
          }
      }
    }
    return;
  }
  // B(p, j) = b[p * ldb + j]: register tiles over the full tiles of columns, a block of rows
  // of B at a time across all of a thread's tiles, so that B streams along its rows (a tile
  // reading its 32 columns down the whole depth touched a new page per row: a [8, 25088] x
  // [25088, 4096] product ran at 6 GB/s). A static schedule gives every thread the same
  // tiles in every block, so its C tiles are its own ...
  const int64_t tiles = s.n / kTileColumns;
  // C tile `tile` over B rows [p0, p0 + depth).
  auto tile_pass = [&](int64_t tile, int64_t p0, int64_t depth, T beta_here) {
    const int64_t j0 = tile * kTileColumns;
    for (int64_t i0 = 0; i0 < s.m; i0 += kTileRows)
      with_row_count(std::min(kTileRows, s.m - i0), [&](auto rows) {
        register_tile<T, rows()>(depth, a_rows.data() + i0 * s.k + p0, s.k, b + p0 * s.ldb + j0,
                                 s.ldb, beta_here, c + i0 * s.ldc + j0, s.ldc);
      });
  };
  if (s.k * s.n * int64_t(sizeof(T)) <= kStreamedB) {
#pragma omp parallel for schedule(static) if (parallel && tiles > 1)
    for (int64_t tile = 0; tile < tiles; ++tile) tile_pass(tile, 0, s.k, beta);
  } else {
#pragma omp parallel if (parallel && tiles > 1)
    for (int64_t p0 = 0; p0 < s.k; p0 += kStreamedDepthBlock) {
      const int64_t depth = std::min(kStreamedDepthBlock, s.k - p0);
#pragma omp for schedule(static) nowait
      for (int64_t tile = 0; tile < tiles; ++tile)
        tile_pass(tile, p0, depth, p0 == 0 ? beta : T(1));
    }
  }
  // ... and the last columns by adding rows of B into the C rows in memory.
  const int64_t tail = tiles * kTileColumns;
  if (tail == s.n) return;
  {
    const int64_t j0 = tail, width = s.n - tail;
    for (int64_t i = 0; i < s.m; ++i) scale_row(c + i * s.ldc + j0, width, beta);
    for (int64_t p = 0; p < s.k; ++p) {
      const T* b_row = b + p * s.ldb + j0;
      for (int64_t i = 0; i < s.m; ++i) {
        const T a_ip = a_rows[size_t(i * s.k + p)];
        T* c_row = c + i * s.ldc + j0;
#pragma omp simd
        for (int64_t j = 0; j < width; ++j) c_row[j] += a_ip * b_row[j];
      }
    }
  }
}

// k <= kSkinny, m large. B is gathered into a dense [k x n] copy; each C row is then
// written once as a sum of k scaled rows of it.
template <typename T>
void short_inner(const GemmShape& s, T alpha, const T* a, const T* b, T beta, T* c) {
  std::vector<T> b_rows;
  const T* dense_b = b;
  int64_t ldb = s.ldb;
  if (s.trans_b) {
    b_rows.resize(size_t(s.k * s.n));
    for (int64_t j = 0; j < s.n; ++j)
      for (int64_t p = 0; p < s.k; ++p) b_rows[size_t(p * s.n + j)] = b[j * s.ldb + p];
    dense_b = b_rows.data();
    ldb = s.n;
  }
#pragma omp parallel for schedule(static) if (s.m * s.n * s.k >= kParallelWork)
  for (int64_t i = 0; i < s.m; ++i) {
    T* c_row = c + i * s.ldc;
    scale_row(c_row, s.n, beta);
    for (int64_t p = 0; p < s.k; ++p) {
      const T a_ip = alpha * a_at(s, a, i, p);
      const T* b_row = dense_b + p * ldb;
#pragma omp simd
      for (int64_t j = 0; j < s.n; ++j) c_row[j] += a_ip * b_row[j];
    }
  }
}

}  // namespace

bool skinny_gemm_applies(const GemmShape& shape) {
  return shape.m > 0 && shape.n > 0 && shape.k > 0 && (shape.m <= kSkinny || shape.k <= kSkinny);
}

template <typename T>
void skinny_gemm(const GemmShape& shape, T alpha, const T* a, const T* b, T beta, T* c) {
  if (shape.m <= kSkinny)
    few_rows(shape, alpha, a, b, beta, c);
  else
    short_inner(shape, alpha, a, b, beta, c);
}

template void skinny_gemm<float>(const GemmShape&, float, const float*, const float*, float,
                                 float*);
template void skinny_gemm<double>(const GemmShape&, double, const double*, const double*, double,
                                  double*);

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

#define SONATA_SKINNY_DECLARE(ns)                                                          \
  namespace ns {                                                                           \
  decltype(::sonata::kernels::cpu::skinny_gemm_applies) skinny_gemm_applies;               \
  template <typename T>                                                                    \
  void skinny_gemm(const GemmShape& shape, T alpha, const T* a, const T* b, T beta, T* c); \
  }
SONATA_CPU_FOR_EACH_NS(SONATA_SKINNY_DECLARE)
#undef SONATA_SKINNY_DECLARE

bool skinny_gemm_applies(const GemmShape& shape) {
  return SONATA_CPU_CALL(skinny_gemm_applies)(shape);
}

template <typename T>
void skinny_gemm(const GemmShape& shape, T alpha, const T* a, const T* b, T beta, T* c) {
  SONATA_CPU_CALL(skinny_gemm<T>)(shape, alpha, a, b, beta, c);
}

template void skinny_gemm<float>(const GemmShape&, float, const float*, const float*, float,
                                 float*);
template void skinny_gemm<double>(const GemmShape&, double, const double*, const double*, double,
                                  double*);

}  // namespace sonata::kernels::cpu
#endif
