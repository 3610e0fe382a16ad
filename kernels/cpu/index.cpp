#include "kernels/cpu/index.h"

#include <cstring>

#include "base/nvtx.h"
#include "kernels/cpu/dispatch.h"

namespace sonata::kernels::cpu {
namespace {

void check_index(int64_t index, int64_t size, const char* kernel) {
  if (index < 0 || index >= size)
    throw Error(str(kernel, ": index ", index, " is out of range for a dimension of size ", size));
}

}  // namespace

void index_select(DType dtype, const void* in, const int64_t* index, void* out, int64_t outer,
                  int64_t in_n, int64_t inner, int64_t index_n) {
  SONATA_NVTX_RANGE("sonata::cpu::index_select");
  for (int64_t j = 0; j < index_n; ++j) check_index(index[j], in_n, "index_select");
  const size_t row_bytes = size_t(inner) * dtype_size(dtype);
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
#pragma omp parallel for collapse(2) schedule(static) if (outer * index_n * inner >= (1 << 15))
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < index_n; ++j)
      std::memcpy(dst + (o * index_n + j) * row_bytes, src + (o * in_n + index[j]) * row_bytes,
                  row_bytes);
}

void index_add(DType dtype, const void* src, const int64_t* index, void* out, int64_t outer,
               int64_t out_n, int64_t inner, int64_t index_n) {
  SONATA_NVTX_RANGE("sonata::cpu::index_add");
  for (int64_t j = 0; j < index_n; ++j) check_index(index[j], out_n, "index_add");
  dispatch_f32_f64(dtype, "index_add", [&]<typename T>() {
    const T* s = static_cast<const T*>(src);
    T* d = static_cast<T*>(out);
    // Parallel over outer only: two j may hit the same row, so j stays sequential.
#pragma omp parallel for schedule(static) if (outer * index_n * inner >= (1 << 15))
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < index_n; ++j)
        for (int64_t i = 0; i < inner; ++i)
          d[(o * out_n + index[j]) * inner + i] += s[(o * index_n + j) * inner + i];
  });
}

void gather(DType dtype, const void* in, const int64_t* index, void* out, int64_t outer,
            int64_t in_n, int64_t inner, int64_t index_n) {
  SONATA_NVTX_RANGE("sonata::cpu::gather");
  const int64_t count = outer * index_n * inner;
  for (int64_t e = 0; e < count; ++e) check_index(index[e], in_n, "gather");
  dispatch_all(dtype, [&]<typename T>() {
    const T* s = static_cast<const T*>(in);
    T* d = static_cast<T*>(out);
#pragma omp parallel for collapse(2) schedule(static) if (count >= (1 << 15))
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < index_n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t at = (o * index_n + j) * inner + i;
          d[at] = s[(o * in_n + index[at]) * inner + i];
        }
  });
}

void scatter_add(DType dtype, const void* src, const int64_t* index, void* out, int64_t outer,
                 int64_t out_n, int64_t inner, int64_t index_n) {
  SONATA_NVTX_RANGE("sonata::cpu::scatter_add");
  const int64_t count = outer * index_n * inner;
  for (int64_t e = 0; e < count; ++e) check_index(index[e], out_n, "scatter_add");
  dispatch_f32_f64(dtype, "scatter_add", [&]<typename T>() {
    const T* s = static_cast<const T*>(src);
    T* d = static_cast<T*>(out);
#pragma omp parallel for schedule(static) if (count >= (1 << 15))
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < index_n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t at = (o * index_n + j) * inner + i;
          d[(o * out_n + index[at]) * inner + i] += s[at];
        }
  });
}

}  // namespace sonata::kernels::cpu
