#include "kernels/cpu/gemm.h"

#include <cblas.h>

#include "base/nvtx.h"
#include "kernels/cpu/dispatch.h"

namespace sonata::kernels::cpu {

void gemm(DType dtype, const GemmShape& s, double alpha, const void* a, const void* b,
          double beta, void* c) {
  SONATA_NVTX_RANGE("sonata::cpu::gemm");
  const CBLAS_TRANSPOSE ta = s.trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = s.trans_b ? CblasTrans : CblasNoTrans;
  // OpenBLAS threads each GEMM itself; batches run one after another.
  for (int64_t i = 0; i < s.batch; ++i) {
    if (dtype == DType::f32) {
      cblas_sgemm(CblasRowMajor, ta, tb, s.m, s.n, s.k, float(alpha),
                  static_cast<const float*>(a) + i * s.stride_a, s.lda,
                  static_cast<const float*>(b) + i * s.stride_b, s.ldb, float(beta),
                  static_cast<float*>(c) + i * s.stride_c, s.ldc);
    } else if (dtype == DType::f64) {
      cblas_dgemm(CblasRowMajor, ta, tb, s.m, s.n, s.k, alpha,
                  static_cast<const double*>(a) + i * s.stride_a, s.lda,
                  static_cast<const double*>(b) + i * s.stride_b, s.ldb, beta,
                  static_cast<double*>(c) + i * s.stride_c, s.ldc);
    } else {
      throw Error(str("gemm: dtype ", dtype_name(dtype), " is not supported on the CPU"));
    }
  }
}

}  // namespace sonata::kernels::cpu
