#include "kernels/cpu/gemm_packed.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#if defined(__x86_64__)
// GCC 12's unpack and shuffle intrinsics pass an "undefined" vector that it then reports as
// maybe uninitialized where they are inlined (GCC bug 105593, fixed in 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif
#include <omp.h>

#include "kernels/cpu/capability_region.h"

#if SONATA_CPU_CAPABILITY >= 1
SONATA_CPU_BEGIN
namespace {

// Which products are worth packing: about 1 MFLOP and no dimension below the AVX-512 register
// tile's (the AVX2 kernel takes the same ones, so that an AVX2 machine's products do not
// depend on OpenBLAS where an AVX-512 one's do not).
constexpr int64_t kMinRows = 8, kMinColumns = 24, kMinDepth = 16;
constexpr int64_t kMinWork = int64_t(1) << 19;

// rows[i][j] becomes rows[j][i]: 8 x 8 floats in ymm registers (both instruction sets have
// them), by 32-bit pairs within 128-bit lanes, then 64-bit pairs, then lanes across rows.
inline void transpose_8x8(__m256 (&rows)[8]) {
  __m256 pairs[8];
  for (int g = 0; g < 8; g += 4) {
    const __m256 lo01 = _mm256_unpacklo_ps(rows[g], rows[g + 1]);
    const __m256 hi01 = _mm256_unpackhi_ps(rows[g], rows[g + 1]);
    const __m256 lo23 = _mm256_unpacklo_ps(rows[g + 2], rows[g + 3]);
    const __m256 hi23 = _mm256_unpackhi_ps(rows[g + 2], rows[g + 3]);
    // pairs[g + e], lane k: rows g..g+3 at element 4k + e.
    pairs[g] = _mm256_shuffle_ps(lo01, lo23, 0x44);
    pairs[g + 1] = _mm256_shuffle_ps(lo01, lo23, 0xEE);
    pairs[g + 2] = _mm256_shuffle_ps(hi01, hi23, 0x44);
    pairs[g + 3] = _mm256_shuffle_ps(hi01, hi23, 0xEE);
  }
  for (int e = 0; e < 4; ++e) {
    rows[e] = _mm256_permute2f128_ps(pairs[e], pairs[4 + e], 0x20);
    rows[4 + e] = _mm256_permute2f128_ps(pairs[e], pairs[4 + e], 0x31);
  }
}

#if SONATA_CPU_CAPABILITY == 2
// The register tile: 8 rows of C (A's values broadcast) by 48 columns (three 16-float
// vectors of B), 24 accumulators of the 32 vector registers.
struct Isa {
  using Vec = __m512;
  static constexpr int64_t kWidth = 16, kVectors = 3, kRows = 8;
  // Cache blocking, measured on the 2-core AVX-512 (Zen 5) machines: one B micro-panel
  // (kDepth x 48 floats, 36 KiB) stays in the 48 KiB L1 while the A micro-panels of a block
  // (kBlockRows x kDepth, 192 KiB) stream from L2, and a block of B (kDepth x kBlockColumns,
  // 2.3 MiB) is reused from L3 by every block of A.
  static constexpr int64_t kDepth = 192, kBlockRows = 256, kBlockColumns = 3072;
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec broadcast(float value) { return _mm512_set1_ps(value); }
  static Vec load(const float* p) { return _mm512_load_ps(p); }
  static Vec loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm512_store_ps(p, v); }
  static void storeu(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  // Lanes [lo, hi) of p (the others 0, and not read); lanes [0, count) of v to p.
  static Vec load_lanes(const float* p, int64_t lo, int64_t hi) {
    const __mmask16 below_hi = __mmask16((1u << hi) - 1), below_lo = __mmask16((1u << lo) - 1);
    return _mm512_maskz_loadu_ps(__mmask16(below_hi & ~below_lo), p);
  }
  static void store_lanes(float* p, Vec v, int64_t count) {
    _mm512_mask_storeu_ps(p, __mmask16((1u << count) - 1), v);
  }
  // rows[i][j] becomes rows[j][i]: 16 x 16 floats in registers, by 32-bit pairs within
  // 128-bit lanes, then 64-bit pairs, then lanes across rows.
  static void transpose(Vec (&rows)[16]) {
    Vec pairs[16];
    for (int g = 0; g < 16; g += 4) {
      const Vec lo01 = _mm512_unpacklo_ps(rows[g], rows[g + 1]);
      const Vec hi01 = _mm512_unpackhi_ps(rows[g], rows[g + 1]);
      const Vec lo23 = _mm512_unpacklo_ps(rows[g + 2], rows[g + 3]);
      const Vec hi23 = _mm512_unpackhi_ps(rows[g + 2], rows[g + 3]);
      // pairs[g + e], lane k: rows g..g+3 at element 4k + e.
      pairs[g] = _mm512_shuffle_ps(lo01, lo23, 0x44);
      pairs[g + 1] = _mm512_shuffle_ps(lo01, lo23, 0xEE);
      pairs[g + 2] = _mm512_shuffle_ps(hi01, hi23, 0x44);
      pairs[g + 3] = _mm512_shuffle_ps(hi01, hi23, 0xEE);
    }
    for (int e = 0; e < 4; ++e) {
      const Vec even_lanes_low = _mm512_shuffle_f32x4(pairs[e], pairs[4 + e], 0x88);
      const Vec odd_lanes_low = _mm512_shuffle_f32x4(pairs[e], pairs[4 + e], 0xDD);
      const Vec even_lanes_high = _mm512_shuffle_f32x4(pairs[8 + e], pairs[12 + e], 0x88);
      const Vec odd_lanes_high = _mm512_shuffle_f32x4(pairs[8 + e], pairs[12 + e], 0xDD);
      rows[e] = _mm512_shuffle_f32x4(even_lanes_low, even_lanes_high, 0x88);
      rows[8 + e] = _mm512_shuffle_f32x4(even_lanes_low, even_lanes_high, 0xDD);
      rows[4 + e] = _mm512_shuffle_f32x4(odd_lanes_low, odd_lanes_high, 0x88);
      rows[12 + e] = _mm512_shuffle_f32x4(odd_lanes_low, odd_lanes_high, 0xDD);
    }
  }
};
#else
// The register tile for the 16 ymm registers: 6 rows of C by 16 columns (two 8-float vectors
// of B), 12 accumulators, two B vectors and one broadcast of A (BLIS's Haswell sgemm shape).
struct Isa {
  using Vec = __m256;
  static constexpr int64_t kWidth = 8, kVectors = 2, kRows = 6;
  // One B micro-panel (kDepth x 16 floats, 16 KiB) in a 32 KiB L1, the A micro-panels of a
  // block (168 x 256, 168 KiB) in L2 (512 KiB on Zen 2/3, 1.25-2 MiB on Intel's cores), a
  // block of B (256 x 3072, 3 MiB) in L3. A block of rows is whole tiles (168 = 28 x 6).
  static constexpr int64_t kDepth = 256, kBlockRows = 168, kBlockColumns = 3072;
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec broadcast(float value) { return _mm256_set1_ps(value); }
  static Vec load(const float* p) { return _mm256_load_ps(p); }
  static Vec loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm256_store_ps(p, v); }
  static void storeu(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  // Lanes [lo, hi) of p (the others 0, and not read); lanes [0, count) of v to p.
  static Vec load_lanes(const float* p, int64_t lo, int64_t hi) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i inside =
        _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(int(lo)), lane),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32(int(hi)), lane));
    return _mm256_maskload_ps(p, inside);
  }
  static void store_lanes(float* p, Vec v, int64_t count) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(int(count)), lane), v);
  }
  static void transpose(Vec (&rows)[8]) { transpose_8x8(rows); }
};
#endif

using Vec = Isa::Vec;
constexpr int64_t kTileRows = Isa::kRows;
constexpr int64_t kVectors = Isa::kVectors;
constexpr int64_t kTileColumns = Isa::kWidth * kVectors;
constexpr int64_t kDepth = Isa::kDepth;
constexpr int64_t kBlockRows = Isa::kBlockRows;
constexpr int64_t kBlockColumns = Isa::kBlockColumns;
static_assert(kBlockRows % kTileRows == 0 && kBlockColumns % kTileColumns == 0);

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

// The first kTileRows floats of v to out (8 on AVX-512; AVX2's 6 under a mask, so that
// nothing past the panel is written).
inline void store_tile_rows(float* out, __m256 v) {
  if constexpr (kTileRows == 8) {
    _mm256_storeu_ps(out, v);
  } else {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(out, _mm256_cmpgt_epi32(_mm256_set1_epi32(int(kTileRows)), lanes), v);
  }
}

// op(A)[rows, depth] starting at (row0, p0), times alpha, as panels of kTileRows rows:
// panel r holds, for each p, its kTileRows rows' values together (zero past the last row).
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
      // A stored [m, k]: the panel is a transpose of the tile's rows, 8 depths at a time in
      // registers (element by element, the packing was a tenth of a 2048 x 1024 x 640
      // product: one scalar store per value, each a panel row apart).
      const float* first_row = a + (row0 + r) * s.lda + p0;
      int64_t p = 0;
      if (live == kTileRows) {
        const __m256 alpha_v = _mm256_set1_ps(alpha);
        for (; p + 8 <= depth; p += 8) {
          __m256 square[8];
          for (int64_t i = 0; i < 8; ++i)
            square[i] = i < kTileRows
                            ? _mm256_mul_ps(alpha_v, _mm256_loadu_ps(first_row + i * s.lda + p))
                            : _mm256_setzero_ps();
          transpose_8x8(square);
          for (int64_t t = 0; t < 8; ++t) store_tile_rows(panel + (p + t) * kTileRows, square[t]);
        }
      }
      for (int64_t i = 0; i < live; ++i) {
        const float* src = first_row + i * s.lda;
        for (int64_t q = p; q < depth; ++q) panel[q * kTileRows + i] = alpha * src[q];
      }
    }
  });
}

// op(B)[depth, columns] starting at (p0, column0) as panels of kTileColumns columns: panel q
// holds, for each p, its kTileColumns columns' values together (zero past the last column).
void pack_b(const GemmShape& s, const float* b, int64_t p0, int64_t depth, int64_t column0,
            int64_t columns, float* out) {
  for_each_panel(columns, kTileColumns, depth, out, [&](int64_t q, int64_t live, float* panel) {
    if (s.trans_b) {
      // B stored [n, k]: each column is contiguous in p, so the panel is a transpose, done
      // a register square at a time (element by element, the packing of a convolution's
      // weight gradient, whose 32 rows give each packed value only 32 multiply-adds, took
      // as long as the multiplication).
      constexpr int64_t kSquare = Isa::kWidth;
      int64_t j = 0;
      for (; j + kSquare <= live; j += kSquare) {
        const float* src = b + (column0 + q + j) * s.ldb + p0;
        int64_t p = 0;
        for (; p + kSquare <= depth; p += kSquare) {
          Vec square[kSquare];
          for (int64_t t = 0; t < kSquare; ++t) square[t] = Isa::loadu(src + t * s.ldb + p);
          Isa::transpose(square);
          for (int64_t t = 0; t < kSquare; ++t)
            Isa::storeu(panel + (p + t) * kTileColumns + j, square[t]);
        }
        for (; p < depth; ++p)
          for (int64_t t = 0; t < kSquare; ++t)
            panel[p * kTileColumns + j + t] = src[t * s.ldb + p];
      }
      for (; j < live; ++j) {
        const float* src = b + (column0 + q + j) * s.ldb + p0;
        for (int64_t p = 0; p < depth; ++p) panel[p * kTileColumns + j] = src[p];
      }
    } else if (live == kTileColumns) {
      // A whole panel row in vector registers: the memcpy of a variable length here became
      // `rep movsq`, whose start-up cost per 192-byte row took 70 % of a 32-row product.
      for (int64_t p = 0; p < depth; ++p) {
        const float* src = b + (p0 + p) * s.ldb + column0 + q;
#pragma GCC unroll 3
        for (int64_t v = 0; v < kVectors; ++v)
          Isa::store(panel + p * kTileColumns + v * Isa::kWidth, Isa::loadu(src + v * Isa::kWidth));
      }
    } else {
      for (int64_t p = 0; p < depth; ++p)
        std::memcpy(panel + p * kTileColumns, b + (p0 + p) * s.ldb + column0 + q,
                    sizeof(float) * size_t(live));
    }
  });
}

// Gathering a segment of an image-columns row, split so that the divisions happen once per
// panel (the column side) and once per row of the depth (the patch side), not per value.
// The column side: [column0, column0 + count) as runs inside one output row each.
struct ColumnRun {
  int64_t image_offset;  // the run's image, from the chunk's first
  int64_t input_row0;    // oh * stride_h: the input row of kernel row 0 before padding
  int64_t first, stop;   // output columns [first, stop) of that row
  int64_t out_offset;    // where output column ow lands: out[out_offset + ow]
};

void plan_runs(const Conv2dShape& s, int64_t column0, int64_t count, std::vector<ColumnRun>& runs) {
  runs.clear();
  const int64_t hw_out = s.h_out * s.w_out;
  for (int64_t column = column0, end = column0 + count; column < end;) {
    const int64_t b = column / hw_out, pixel = column % hw_out;
    const int64_t oh = pixel / s.w_out, first = pixel % s.w_out;
    const int64_t run = std::min(end - column, s.w_out - first);
    runs.push_back(
        {b * s.c_in * s.h * s.w, oh * s.stride_h, first, first + run, (column - column0) - first});
    column += run;
  }
}

// The patch side: row r = (channel c, kernel row i, kernel column j).
struct PatchRow {
  int64_t plane_offset;  // c's plane in an image
  int64_t row_shift;     // i * dil_h - pad_h
  int64_t w_offset;      // j * dil_w - pad_w
  int64_t lo, hi;        // output columns whose input column lies inside the image
};

PatchRow patch_row(const Conv2dShape& s, int64_t r) {
  const int64_t c = r / (s.kh * s.kw), i = (r / s.kw) % s.kh, j = r % s.kw;
  const int64_t w_offset = j * s.dil_w - s.pad_w;
  const int64_t lo =
      std::min(s.w_out, w_offset >= 0 ? 0 : (-w_offset + s.stride_w - 1) / s.stride_w);
  const int64_t last = s.w - 1 - w_offset;  // the largest ow * stride_w allowed
  const int64_t hi = std::max(lo, last < 0 ? lo : std::min(s.w_out, last / s.stride_w + 1));
  return {c * s.h * s.w, i * s.dil_h - s.pad_h, w_offset, lo, hi};
}

// out[k] = columns[row, column0 + k] for the segment that `runs` describe.
void gather(const ImageColumns& source, const PatchRow& row, const std::vector<ColumnRun>& runs,
            float* out) {
  const Conv2dShape& s = source.shape;
  for (const ColumnRun& run : runs) {
    float* dst = out + run.out_offset;
    const int64_t ih = run.input_row0 + row.row_shift;
    if (ih < 0 || ih >= s.h) {
      for (int64_t ow = run.first; ow < run.stop; ++ow) dst[ow] = 0.0f;
      continue;
    }
    const float* src = source.x + run.image_offset + row.plane_offset + ih * s.w + row.w_offset;
    const int64_t inside_lo = std::clamp(row.lo, run.first, run.stop);
    const int64_t inside_hi = std::clamp(row.hi, inside_lo, run.stop);
    if (s.stride_w == 1) {
      // A vector's worth at a time under lane masks: the padding's zeros, the copy and a
      // short run's end in one instruction each (scalar loops around the copy cost more
      // than the copy in runs of at most 48).
      for (int64_t ow = run.first; ow < run.stop; ow += Isa::kWidth) {
        const int64_t lanes = std::min(Isa::kWidth, run.stop - ow);
        const int64_t lo = std::clamp<int64_t>(inside_lo - ow, 0, lanes);
        const int64_t hi = std::clamp<int64_t>(inside_hi - ow, lo, lanes);
        Isa::store_lanes(dst + ow, Isa::load_lanes(src + ow, lo, hi), lanes);
      }
      continue;
    }
    for (int64_t ow = run.first; ow < inside_lo; ++ow) dst[ow] = 0.0f;
    for (int64_t ow = inside_lo; ow < inside_hi; ++ow) dst[ow] = src[ow * s.stride_w];
    for (int64_t ow = inside_hi; ow < run.stop; ++ow) dst[ow] = 0.0f;
  }
}

thread_local PackBuffer gathered_rows_buffer;
thread_local std::vector<ColumnRun> column_runs;
thread_local std::vector<PatchRow> patch_rows;

// Called once per depth slice [p0, p0 + depth), before its B panels are packed: what the
// slice's panels share, worked out once (a dense B has nothing to prepare). Its divisions
// per panel were a third of a forward's packing.
void prepare_depth_slice(const GemmShape&, const float*, int64_t, int64_t) {}

void prepare_depth_slice(const GemmShape& s, const ImageColumns& source, int64_t p0,
                         int64_t depth) {
  if (s.trans_b) {  // the depth runs over pixels
    plan_runs(source.shape, p0, depth, column_runs);
    return;
  }
  patch_rows.resize(size_t(depth));  // the depth runs over patch rows
  for (int64_t p = 0; p < depth; ++p) patch_rows[size_t(p)] = patch_row(source.shape, p0 + p);
}

// pack_b's layout, op(B) being the image columns or their transpose; prepare_depth_slice ran
// for [p0, p0 + depth).
void pack_b(const GemmShape& s, const ImageColumns& source, int64_t /*p0: prepared*/, int64_t depth,
            int64_t column0, int64_t columns, float* out) {
  if (!s.trans_b) {
    // op(B)[p, column]: rows of the depth are patch rows, columns are pixels.
    for_each_panel(columns, kTileColumns, depth, out, [&](int64_t q, int64_t live, float* panel) {
      plan_runs(source.shape, column0 + q, live, column_runs);
      for (int64_t p = 0; p < depth; ++p)
        gather(source, patch_rows[size_t(p)], column_runs, panel + p * kTileColumns);
    });
    return;
  }
  // op(B)[p, j] = columns[j, p]: the depth runs over pixels. Each of a panel's patch rows is
  // gathered whole along the depth, then packed as a transposed dense B (its register
  // transposes).
  float* gathered = gathered_rows_buffer.get(kTileColumns * depth);
  GemmShape dense = s;
  dense.ldb = depth;
  for (int64_t q = 0; q < columns; q += kTileColumns) {
    const int64_t live = std::min(kTileColumns, columns - q);
    for (int64_t j = 0; j < live; ++j)
      gather(source, patch_row(source.shape, column0 + q + j), column_runs, gathered + j * depth);
    pack_b(dense, gathered, 0, depth, 0, live, out + q * depth);
  }
}

// C[kTileRows, kTileColumns] tile (or its top-left rows x columns) = beta * C + panel_a *
// panel_b over depth. (Reading an unpacked B in place instead, for few rows of C, ran 2-4x
// slower: a tile's 192 rows of B lie a whole B row apart, one page and one cache set each.)
void tile(int64_t depth, const float* panel_a, const float* panel_b, float* c, int64_t ldc,
          int64_t rows, int64_t columns, float beta) {
  Vec acc[kTileRows][kVectors];
#pragma GCC unroll 8
  for (int64_t i = 0; i < kTileRows; ++i)
#pragma GCC unroll 3
    for (int64_t v = 0; v < kVectors; ++v) acc[i][v] = Isa::zero();
  for (int64_t p = 0; p < depth; ++p) {
    Vec b_p[kVectors];
#pragma GCC unroll 3
    for (int64_t v = 0; v < kVectors; ++v) b_p[v] = Isa::load(panel_b + v * Isa::kWidth);
#pragma GCC unroll 8
    for (int64_t i = 0; i < kTileRows; ++i) {
      const Vec a_i = Isa::broadcast(panel_a[i]);
#pragma GCC unroll 3
      for (int64_t v = 0; v < kVectors; ++v) acc[i][v] = Isa::fmadd(a_i, b_p[v], acc[i][v]);
    }
    panel_a += kTileRows;
    panel_b += kTileColumns;
  }
  if (rows == kTileRows && columns == kTileColumns) {
    const Vec beta_v = Isa::broadcast(beta);
#pragma GCC unroll 8
    for (int64_t i = 0; i < kTileRows; ++i) {
#pragma GCC unroll 3
      for (int64_t v = 0; v < kVectors; ++v) {
        float* out = c + i * ldc + v * Isa::kWidth;
        if (beta == 0.0f)
          Isa::storeu(out, acc[i][v]);
        else if (beta == 1.0f)
          Isa::storeu(out, Isa::add(Isa::loadu(out), acc[i][v]));
        else
          Isa::storeu(out, Isa::fmadd(beta_v, Isa::loadu(out), acc[i][v]));
      }
    }
    return;
  }
  alignas(64) float sums[kTileRows][kTileColumns];
  for (int64_t i = 0; i < kTileRows; ++i)
    for (int64_t v = 0; v < kVectors; ++v) Isa::store(&sums[i][v * Isa::kWidth], acc[i][v]);
  for (int64_t i = 0; i < rows; ++i) {
    float* out = c + i * ldc;
    for (int64_t j = 0; j < columns; ++j)
      out[j] = beta == 0.0f ? sums[i][j] : beta * out[j] + sums[i][j];
  }
}

// C[row0:row1, column0:column1] of the product, on the calling thread. B: a dense matrix
// (const float*) or ImageColumns.
template <typename B>
void gemm_region(const GemmShape& s, float alpha, const float* a, const B& b, float beta, float* c,
                 int64_t row0, int64_t row1, int64_t column0, int64_t column1) {
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
      prepare_depth_slice(s, b, pc, kc);
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

template <typename B>
void threaded_sgemm(const GemmShape& s, float alpha, const float* a, const B& b, float beta,
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

}  // namespace

bool packed_sgemm_applies(const GemmShape& s) {
  // SONATA_PACKED_SGEMM=0 hands every product back to OpenBLAS, for side-by-side timing.
  static const bool enabled = [] {
    const char* setting = std::getenv("SONATA_PACKED_SGEMM");
    return !setting || std::strcmp(setting, "0") != 0;
  }();
  return enabled && s.m >= kMinRows && s.n >= kMinColumns && s.k >= kMinDepth &&
         s.m * s.n * s.k >= kMinWork;
}

void packed_sgemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta,
                  float* c) {
  threaded_sgemm(s, alpha, a, b, beta, c);
}

void packed_sgemm_image(const GemmShape& s, float alpha, const float* a,
                        const ImageColumns& columns, float beta, float* c) {
  threaded_sgemm(s, alpha, a, columns, beta, c);
}

SONATA_CPU_END

#else  // the baseline: OpenBLAS (or the built-in loop) keeps every product

SONATA_CPU_BEGIN
bool packed_sgemm_applies(const GemmShape&) {
  return false;
}

void packed_sgemm(const GemmShape&, float, const float*, const float*, float, float*) {
  std::abort();  // unreachable: packed_sgemm_applies is false
}

void packed_sgemm_image(const GemmShape&, float, const float*, const ImageColumns&, float, float*) {
  std::abort();  // unreachable: packed_sgemm_applies is false
}
SONATA_CPU_END

#endif

#if SONATA_CPU_ENTRY_POINTS
namespace sonata::kernels::cpu {

SONATA_CPU_DECLARE(packed_sgemm_applies)
SONATA_CPU_DECLARE(packed_sgemm)
SONATA_CPU_DECLARE(packed_sgemm_image)

bool packed_sgemm_applies(const GemmShape& shape) {
  return SONATA_CPU_CALL(packed_sgemm_applies)(shape);
}

void packed_sgemm(const GemmShape& shape, float alpha, const float* a, const float* b, float beta,
                  float* c) {
  SONATA_CPU_CALL(packed_sgemm)(shape, alpha, a, b, beta, c);
}

void packed_sgemm_image(const GemmShape& shape, float alpha, const float* a,
                        const ImageColumns& columns, float beta, float* c) {
  SONATA_CPU_CALL(packed_sgemm_image)(shape, alpha, a, columns, beta, c);
}

}  // namespace sonata::kernels::cpu
#endif
