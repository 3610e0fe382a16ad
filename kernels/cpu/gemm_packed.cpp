#include "kernels/cpu/gemm_packed.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include <omp.h>

namespace sonata::kernels::cpu {

#if defined(__AVX512F__)
namespace {

// The register tile: 8 rows of C (A's values broadcast) by 48 columns (three 16-float
// vectors of B), 24 accumulators of the 32 vector registers.
constexpr int64_t kTileRows = 8;
constexpr int64_t kTileColumns = 48;
// Cache blocking, measured on the 2-core AVX-512 (Zen 5) machines: one B micro-panel
// (kDepth x 48 floats, 36 KiB) stays in the 48 KiB L1 while the A micro-panels of a block
// (kBlockRows x kDepth, 192 KiB) stream from L2, and a block of B (kDepth x kBlockColumns,
// 2.3 MiB) is reused from L3 by every block of A.
constexpr int64_t kDepth = 192;
constexpr int64_t kBlockRows = 256;
constexpr int64_t kBlockColumns = 3072;
// Below this many multiply-adds per thread, waking another thread costs more than it saves.
constexpr int64_t kWorkPerThread = int64_t(1) << 21;

// A 64-byte aligned buffer per thread that only grows: packing must not allocate per call
// (a fresh multi-MiB block is mapped and zero-faulted by the kernel every time).
class PackBuffer {
 public:
  PackBuffer() = default;
  PackBuffer(const PackBuffer&) = delete;
  PackBuffer& operator=(const PackBuffer&) = delete;
  ~PackBuffer() { std::free(data_); }
  float* get(int64_t floats) {
    if (floats > capacity_) {
      std::free(data_);
      const size_t bytes = (size_t(floats) * sizeof(float) + 63) / 64 * 64;
      data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (!data_) throw std::bad_alloc();
      capacity_ = floats;
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  int64_t capacity_ = 0;
};

thread_local PackBuffer packed_a_buffer, packed_b_buffer;

// Calls fill(first, live, panel) for each panel of `width` lines (rows of A, columns of B)
// of `extent`, each panel `width * depth` floats of `out`; a last, partial panel is zeroed
// first, so that the tiles multiply its missing lines by zero.
template <typename Fill>
void for_each_panel(int64_t extent, int64_t width, int64_t depth, float* out, Fill fill) {
  for (int64_t first = 0; first < extent; first += width) {
    const int64_t live = std::min(width, extent - first);
    float* panel = out + first * depth;
    if (live < width) std::memset(panel, 0, sizeof(float) * size_t(width * depth));
    fill(first, live, panel);
  }
}

// op(A)[rows, depth] starting at (row0, p0), times alpha, as panels of kTileRows rows:
// panel r holds, for each p, its 8 rows' values together (zero past the last row).
void pack_a(const GemmShape& s, const float* a, float alpha, int64_t row0, int64_t rows, int64_t p0,
            int64_t depth, float* out) {
  for_each_panel(rows, kTileRows, depth, out, [&](int64_t r, int64_t live, float* panel) {
    if (s.trans_a) {
      // A stored [k, m]: each p's rows lie side by side.
      for (int64_t p = 0; p < depth; ++p) {
        const float* src = a + (p0 + p) * s.lda + row0 + r;
        for (int64_t i = 0; i < live; ++i) panel[p * kTileRows + i] = alpha * src[i];
      }
    } else {
      for (int64_t i = 0; i < live; ++i) {
        const float* src = a + (row0 + r + i) * s.lda + p0;
        for (int64_t p = 0; p < depth; ++p) panel[p * kTileRows + i] = alpha * src[p];
      }
    }
  });
}

// op(B)[depth, columns] starting at (p0, column0) as panels of kTileColumns columns: panel q
// holds, for each p, its 48 columns' values together (zero past the last column).
void pack_b(const GemmShape& s, const float* b, int64_t p0, int64_t depth, int64_t column0,
            int64_t columns, float* out) {
  for_each_panel(columns, kTileColumns, depth, out, [&](int64_t q, int64_t live, float* panel) {
    if (s.trans_b) {
      // B stored [n, k]: each column is contiguous in p.
      for (int64_t j = 0; j < live; ++j) {
        const float* src = b + (column0 + q + j) * s.ldb + p0;
        for (int64_t p = 0; p < depth; ++p) panel[p * kTileColumns + j] = src[p];
      }
    } else {
      for (int64_t p = 0; p < depth; ++p)
        std::memcpy(panel + p * kTileColumns, b + (p0 + p) * s.ldb + column0 + q,
                    sizeof(float) * size_t(live));
    }
  });
}

// C[8, 48] tile (or its top-left rows x columns) = beta * C + panel_a * panel_b over depth.
// (Reading an unpacked B in place instead, for few rows of C, ran 2-4x slower: a tile's 192
// rows of B lie a whole B row apart, one page and one cache set each.)
void tile(int64_t depth, const float* panel_a, const float* panel_b, float* c, int64_t ldc,
          int64_t rows, int64_t columns, float beta) {
  __m512 acc[kTileRows][3];
#pragma GCC unroll 8
  for (int64_t i = 0; i < kTileRows; ++i)
#pragma GCC unroll 3
    for (int64_t v = 0; v < 3; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < depth; ++p) {
    const __m512 b0 = _mm512_load_ps(panel_b);
    const __m512 b1 = _mm512_load_ps(panel_b + 16);
    const __m512 b2 = _mm512_load_ps(panel_b + 32);
#pragma GCC unroll 8
    for (int64_t i = 0; i < kTileRows; ++i) {
      const __m512 a_i = _mm512_set1_ps(panel_a[i]);
      acc[i][0] = _mm512_fmadd_ps(a_i, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(a_i, b1, acc[i][1]);
      acc[i][2] = _mm512_fmadd_ps(a_i, b2, acc[i][2]);
    }
    panel_a += kTileRows;
    panel_b += kTileColumns;
  }
  if (rows == kTileRows && columns == kTileColumns) {
    const __m512 beta_v = _mm512_set1_ps(beta);
#pragma GCC unroll 8
    for (int64_t i = 0; i < kTileRows; ++i) {
#pragma GCC unroll 3
      for (int64_t v = 0; v < 3; ++v) {
        float* out = c + i * ldc + v * 16;
        if (beta == 0.0f)
          _mm512_storeu_ps(out, acc[i][v]);
        else if (beta == 1.0f)
          _mm512_storeu_ps(out, _mm512_add_ps(_mm512_loadu_ps(out), acc[i][v]));
        else
          _mm512_storeu_ps(out, _mm512_fmadd_ps(beta_v, _mm512_loadu_ps(out), acc[i][v]));
      }
    }
    return;
  }
  alignas(64) float sums[kTileRows][kTileColumns];
  for (int64_t i = 0; i < kTileRows; ++i)
    for (int64_t v = 0; v < 3; ++v) _mm512_store_ps(&sums[i][v * 16], acc[i][v]);
  for (int64_t i = 0; i < rows; ++i) {
    float* out = c + i * ldc;
    for (int64_t j = 0; j < columns; ++j)
      out[j] = beta == 0.0f ? sums[i][j] : beta * out[j] + sums[i][j];
  }
}

// C[row0:row1, column0:column1] of the product, on the calling thread.
void gemm_region(const GemmShape& s, float alpha, const float* a, const float* b, float beta,
                 float* c, int64_t row0, int64_t row1, int64_t column0, int64_t column1) {
  const int64_t rows = row1 - row0, columns = column1 - column0;
  const int64_t block_rows = std::min(kBlockRows, (rows + kTileRows - 1) / kTileRows * kTileRows);
  const int64_t block_columns =
      std::min(kBlockColumns, (columns + kTileColumns - 1) / kTileColumns * kTileColumns);
  float* packed_a = packed_a_buffer.get(block_rows * kDepth);
  float* packed_b = packed_b_buffer.get(block_columns * kDepth);
  for (int64_t jc = column0; jc < column1; jc += kBlockColumns) {
    const int64_t nc = std::min(kBlockColumns, column1 - jc);
    for (int64_t pc = 0; pc < s.k; pc += kDepth) {
      const int64_t kc = std::min(kDepth, s.k - pc);
      // Only the first slice of the depth applies beta; the others add to it.
      const float beta_here = pc == 0 ? beta : 1.0f;
      // With a single block of rows, each B panel is used right after it is packed, while it
      // is still in L1; otherwise the whole block of B is packed once for every block of A.
      const bool single_row_block = rows <= kBlockRows;
      if (!single_row_block) pack_b(s, b, pc, kc, jc, nc, packed_b);
      for (int64_t ic = row0; ic < row1; ic += kBlockRows) {
        const int64_t mc = std::min(kBlockRows, row1 - ic);
        pack_a(s, a, alpha, ic, mc, pc, kc, packed_a);
        for (int64_t jr = 0; jr < nc; jr += kTileColumns) {
          const int64_t columns_here = std::min(kTileColumns, nc - jr);
          if (single_row_block) pack_b(s, b, pc, kc, jc + jr, columns_here, packed_b + jr * kc);
          for (int64_t ir = 0; ir < mc; ir += kTileRows) {
            float* c_tile = c + (ic + ir) * s.ldc + jc + jr;
            const int64_t rows_here = std::min(kTileRows, mc - ir);
            tile(kc, packed_a + ir * kc, packed_b + jr * kc, c_tile, s.ldc, rows_here, columns_here,
                 beta_here);
          }
        }
      }
    }
  }
}

}  // namespace

bool packed_sgemm_applies(const GemmShape& s) {
  // SONATA_PACKED_SGEMM=0 hands every product back to OpenBLAS, for side-by-side timing.
  static const bool enabled = [] {
    const char* setting = std::getenv("SONATA_PACKED_SGEMM");
    return !setting || std::strcmp(setting, "0") != 0;
  }();
  return enabled && s.m >= kTileRows && s.n >= kTileColumns / 2 && s.k >= 16 &&
         s.m * s.n * s.k >= (int64_t(1) << 19);
}

void packed_sgemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta,
                  float* c) {
  const int64_t work = s.m * s.n * s.k;
  const int64_t threads =
      omp_in_parallel() ? 1 : std::clamp<int64_t>(work / kWorkPerThread, 1, omp_get_max_threads());
  // Each thread computes a band of C with its own packed panels: along n when C is wide
  // (the convolutions' pixel columns), else along m. A band is whole register tiles.
  const bool split_columns = s.n >= s.m;
  const int64_t extent = split_columns ? s.n : s.m;
  const int64_t unit = split_columns ? kTileColumns : kTileRows;
  const int64_t units = (extent + unit - 1) / unit;
  const int64_t bands = std::min(threads, units);
#pragma omp parallel for num_threads(bands) schedule(static, 1) if (bands > 1)
  for (int64_t band = 0; band < bands; ++band) {
    const int64_t first = std::min(extent, units * band / bands * unit);
    const int64_t last = std::min(extent, units * (band + 1) / bands * unit);
    if (first >= last) continue;
    if (split_columns)
      gemm_region(s, alpha, a, b, beta, c, 0, s.m, first, last);
    else
      gemm_region(s, alpha, a, b, beta, c, first, last, 0, s.n);
  }
}

#else  // no AVX-512 in this build: OpenBLAS (or the built-in loop) keeps every product

bool packed_sgemm_applies(const GemmShape&) {
  return false;
}

void packed_sgemm(const GemmShape&, float, const float*, const float*, float, float*) {
  std::abort();  // unreachable: packed_sgemm_applies is false
}

#endif

}  // namespace sonata::kernels::cpu
