#include "kernels/cpu/gemm.h"

#include <type_traits>

#if SONATA_WITH_BLAS
#include <cblas.h>
#endif

#include "base/nvtx.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/gemm_packed.h"
#include "kernels/cpu/gemm_skinny.h"

namespace sonata::kernels::cpu {
namespace {

#if SONATA_WITH_BLAS
void blas_gemm(float, const GemmShape& s, double alpha, const float* a, const float* b, double beta,
               float* c) {
  cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
              s.trans_b ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, float(alpha), a, s.lda, b,
              s.ldb, float(beta), c, s.ldc);
}
void blas_gemm(double, const GemmShape& s, double alpha, const double* a, const double* b,
               double beta, double* c) {
  cblas_dgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
              s.trans_b ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, alpha, a, s.lda, b, s.ldb, beta,
              c, s.ldc);
}
#else
// Only for builds without OpenBLAS (the GPU machines, where the CPU is just the tests'
// reference): correct, not fast. Accumulates in double.
template <typename T>
void blas_gemm(T, const GemmShape& s, double alpha, const T* a, const T* b, double beta, T* c) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        const T av = s.trans_a ? a[p * s.lda + i] : a[i * s.lda + p];
        const T bv = s.trans_b ? b[j * s.ldb + p] : b[p * s.ldb + j];
        acc += double(av) * double(bv);
      }
      T& out = c[i * s.ldc + j];
      out = T(alpha * acc + (beta == 0.0 ? 0.0 : beta * double(out)));
    }
  }
}
#endif

// The packed sgemm (AVX2 or AVX-512) for float; double never takes it (gemm's `packed` is false
// there).
void packed_gemm(const GemmShape& s, double alpha, const float* a, const float* b, double beta,
                 float* c) {
  packed_sgemm(s, float(alpha), a, b, float(beta), c);
}
void packed_gemm(const GemmShape&, double, const double*, const double*, double, double*) {}

}  // namespace

void gemm(DType dtype, const GemmShape& shape, double alpha, const void* a, const void* b,
          double beta, void* c) {
  SONATA_NVTX_RANGE("sonata::cpu::gemm");
  dispatch_f32_f64(dtype, "gemm", [&]<typename T>() {
    // Each product is threaded inside; batches run one after another.
    const bool skinny = skinny_gemm_applies(shape);
    const bool packed = !skinny && std::is_same_v<T, float> && packed_sgemm_applies(shape);
    for (int64_t i = 0; i < shape.batch; ++i) {
      const T* a_i = static_cast<const T*>(a) + i * shape.stride_a;
      const T* b_i = static_cast<const T*>(b) + i * shape.stride_b;
      T* c_i = static_cast<T*>(c) + i * shape.stride_c;
      if (skinny)
        skinny_gemm<T>(shape, T(alpha), a_i, b_i, T(beta), c_i);
      else if (packed)
        packed_gemm(shape, alpha, a_i, b_i, beta, c_i);
      else
        blas_gemm(T(), shape, alpha, a_i, b_i, beta, c_i);
    }
  });
}

const char* blas_core_name() {
#if SONATA_WITH_BLAS
  return openblas_get_corename();
#else
  return "built-in loop";
#endif
}

}  // namespace sonata::kernels::cpu
