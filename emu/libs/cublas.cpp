// cuBLAS on the CPU: handles bound to the device current at cublasCreate, a stream and a
// workspace per handle, and GEMMs as work on the handle's stream that read exactly the
// bytes of A, B (and C when beta is not zero) and write those of C and the workspace.
#include <cublas_api.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "emu/libs/internal.h"
#include "emu/libs/numeric.h"

struct cublasContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;  // the caller's (cublasSetWorkspace), or none: cuBLAS's own pool
  size_t workspace_bytes = 0;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
};

namespace {

using sonata::emu::Elem;

cublasStatus_t fail(cublasStatus_t status, const std::string& message) {
  sonata::emu::library_log("cuBLAS", message);
  return status;
}

bool elem_of(cudaDataType type, Elem* elem) {
  switch (type) {
    case CUDA_R_16F:
      *elem = Elem::f16;
      return true;
    case CUDA_R_16BF:
      *elem = Elem::bf16;
      return true;
    case CUDA_R_32F:
      *elem = Elem::f32;
      return true;
    case CUDA_R_64F:
      *elem = Elem::f64;
      return true;
    default:
      return false;
  }
}

// How products are formed and summed for a (data type, compute type, math mode).
struct Arithmetic {
  bool tf32_inputs = false;       // fp32 operands rounded to TF32 first (tensor cores)
  bool double_accumulate = true;  // fp32 data: exact products summed in double, then rounded
  bool compute_64 = false;        // alpha and beta are doubles
};

bool arithmetic_for(Elem data, cublasComputeType_t compute, cublasMath_t math, Arithmetic* out) {
  const int base_math = int(math) & ~int(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  switch (compute) {
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
      if (data != Elem::f64) return false;
      out->compute_64 = true;
      return true;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      if (data != Elem::f32) return false;
      out->tf32_inputs = true;
      return true;
    case CUBLAS_COMPUTE_32F:
      if (data == Elem::f64) return false;
      // COMPUTE_32F with the TF32 math mode lets fp32 GEMMs use TF32 tensor cores.
      out->tf32_inputs = data == Elem::f32 && base_math == CUBLAS_TF32_TENSOR_OP_MATH;
      // fp16/bf16 inputs are exact in fp32; tensor cores accumulate them in fp32.
      out->double_accumulate = data == Elem::f32;
      return true;
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      if (data == Elem::f64) return false;
      out->double_accumulate = data == Elem::f32;
      return true;
    default:
      return false;
  }
}

struct GemmArgs {
  cublasHandle_t handle;
  const char* name;
  cublasOperation_t transa, transb;
  int64_t m, n, k;
  const void *alpha, *A, *B, *beta;
  void* C;
  cudaDataType Atype, Btype, Ctype;
  int64_t lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;
  int64_t batch;
  cublasComputeType_t compute;
};

cublasStatus_t gemm(const GemmArgs& g) {
  if (!g.handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, std::string(g.name) + ": null handle");
  Elem elem{};
  if (g.Atype != g.Btype || g.Atype != g.Ctype || !elem_of(g.Atype, &elem))
    return fail(CUBLAS_STATUS_NOT_SUPPORTED,
                std::string(g.name) + ": data types A " + std::to_string(g.Atype) + ", B " +
                    std::to_string(g.Btype) + ", C " + std::to_string(g.Ctype) +
                    " are not a supported combination (all f16, bf16, f32 or f64)");
  Arithmetic arith;
  if (!arithmetic_for(elem, g.compute, g.handle->math, &arith))
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, std::string(g.name) + ": compute type " +
                                                 std::to_string(g.compute) + " with " +
                                                 sonata::emu::elem_name(elem) + " data");
  auto bad = [&](const std::string& what) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, std::string(g.name) + ": " + what);
  };
  if (g.transa > CUBLAS_OP_C || g.transb > CUBLAS_OP_C) return bad("invalid transpose flag");
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0)
    return bad("negative m, n, k or batch count (m " + std::to_string(g.m) + ", n " +
               std::to_string(g.n) + ", k " + std::to_string(g.k) + ")");
  const bool ta = g.transa != CUBLAS_OP_N, tb = g.transb != CUBLAS_OP_N;
  const int64_t a_rows = ta ? g.k : g.m, b_rows = tb ? g.n : g.k;
  if (g.lda < std::max<int64_t>(1, a_rows))
    return bad("lda " + std::to_string(g.lda) + " < " + std::to_string(a_rows) +
               " rows of op(A)'s storage");
  if (g.ldb < std::max<int64_t>(1, b_rows))
    return bad("ldb " + std::to_string(g.ldb) + " < " + std::to_string(b_rows) +
               " rows of op(B)'s storage");
  if (g.ldc < std::max<int64_t>(1, g.m))
    return bad("ldc " + std::to_string(g.ldc) + " < m " + std::to_string(g.m));
  if (!g.alpha || !g.beta) return bad("null alpha or beta");
  if (g.handle->pointer_mode != CUBLAS_POINTER_MODE_HOST)
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, std::string(g.name) +
                                                 ": the emulator takes alpha and beta on the host "
                                                 "only (CUBLAS_POINTER_MODE_HOST)");
  const int stream_device = sonata::emu::stream_device_for(g.handle->stream, g.name);
  if (stream_device != g.handle->device)
    return fail(CUBLAS_STATUS_EXECUTION_FAILED,
                std::string(g.name) + ": the handle was created on device " +
                    std::to_string(g.handle->device) + " but its stream belongs to device " +
                    std::to_string(stream_device) +
                    " (a handle serves the device it was created on)");
  if (g.m == 0 || g.n == 0 || g.batch == 0) return CUBLAS_STATUS_SUCCESS;

  const double alpha = arith.compute_64 ? *static_cast<const double*>(g.alpha)
                                        : double(*static_cast<const float*>(g.alpha));
  const double beta = arith.compute_64 ? *static_cast<const double*>(g.beta)
                                       : double(*static_cast<const float*>(g.beta));
  const int64_t eb = sonata::emu::elem_size(elem);
  sonata::emu::Work work;
  work.name = g.name;
  work.kind = sonata::emu::WorkKind::library;
  work.cost = {.flops = 2.0 * double(g.m) * double(g.n) * double(g.k) * double(g.batch),
               .bytes = double(g.m * g.k + g.k * g.n + g.m * g.n * (beta != 0.0 ? 2 : 1)) *
                        double(eb) * double(g.batch),
               .math = elem == Elem::f16 || elem == Elem::bf16 ? "tensor16"
                       : elem == Elem::f64                     ? "fp64"
                       : arith.tf32_inputs                     ? "tf32"
                                                               : "fp32",
               .library = "cublas"};
  const int64_t a_cols = ta ? g.m : g.k, b_cols = tb ? g.k : g.n;
  const bool reads_ab = g.k > 0 && alpha != 0.0;
  for (int64_t b = 0; b < g.batch; ++b) {
    if (reads_ab) {
      sonata::emu::add_strided(work.reads, static_cast<const char*>(g.A) + b * g.stride_a * eb,
                               a_rows, a_cols, g.lda, eb);
      sonata::emu::add_strided(work.reads, static_cast<const char*>(g.B) + b * g.stride_b * eb,
                               b_rows, b_cols, g.ldb, eb);
    }
    const char* c = static_cast<const char*>(g.C) + b * g.stride_c * eb;
    // BLAS: with beta == 0, C is not read (it may hold NaN or never have been written).
    if (beta != 0.0) sonata::emu::add_strided(work.reads, c, g.m, g.n, g.ldc, eb);
    sonata::emu::add_strided(work.writes, c, g.m, g.n, g.ldc, eb);
  }
  // cuBLAS may use all of the workspace it was given.
  if (g.handle->workspace && g.handle->workspace_bytes > 0)
    work.writes.push_back({g.handle->workspace, g.handle->workspace_bytes});

  GemmArgs a = g;
  work.run = [a, elem, arith, alpha, beta, ta, tb] {
    const int64_t eb = sonata::emu::elem_size(elem);
    // op(A) as m x k and op(B) as k x n, row by row, as the arithmetic sees the values
    // (TF32-rounded where tensor cores may be used), so the product loop does arithmetic only.
    std::vector<double> op_a(size_t(a.m * a.k)), op_b(size_t(a.n * a.k));
    auto value = [&](const void* base, int64_t index) {
      const double v = sonata::emu::load_elem(elem, base, index);
      return arith.tf32_inputs ? double(sonata::emu::round_to_tf32(float(v))) : v;
    };
    const bool wide = arith.double_accumulate || arith.compute_64;
    for (int64_t b = 0; b < a.batch; ++b) {
      char* c_base = static_cast<char*>(a.C) + b * a.stride_c * eb;
      if (alpha != 0.0 && a.k > 0) {
        const char* a_base = static_cast<const char*>(a.A) + b * a.stride_a * eb;
        const char* b_base = static_cast<const char*>(a.B) + b * a.stride_b * eb;
        for (int64_t i = 0; i < a.m; ++i)
          for (int64_t l = 0; l < a.k; ++l)
            op_a[size_t(i * a.k + l)] = value(a_base, ta ? l + i * a.lda : i + l * a.lda);
        for (int64_t j = 0; j < a.n; ++j)
          for (int64_t l = 0; l < a.k; ++l)
            op_b[size_t(j * a.k + l)] = value(b_base, tb ? j + l * a.ldb : l + j * a.ldb);
      }
      for (int64_t j = 0; j < a.n; ++j)
        for (int64_t i = 0; i < a.m; ++i) {
          double sum = 0.0;
          float sum_f = 0.0f;
          if (alpha != 0.0) {
            const double* row = op_a.data() + i * a.k;
            const double* col = op_b.data() + j * a.k;
            for (int64_t l = 0; l < a.k; ++l) {
              if (wide)
                sum += row[l] * col[l];
              else
                sum_f += float(row[l]) * float(col[l]);  // exact: fp16/bf16 products fit in fp32
            }
          }
          double result = wide ? sum : double(sum_f);
          if (!arith.compute_64) result = double(float(result));
          result *= alpha;
          if (beta != 0.0) result += beta * sonata::emu::load_elem(elem, c_base, i + j * a.ldc);
          sonata::emu::store_elem(elem, c_base, i + j * a.ldc, result);
        }
    }
  };
  const cudaError_t queued = sonata::emu::enqueue(g.handle->stream, std::move(work));
  if (queued != cudaSuccess)
    return fail(CUBLAS_STATUS_EXECUTION_FAILED,
                std::string(g.name) + ": could not enqueue on the handle's stream (CUDA error " +
                    std::to_string(int(queued)) + ")");
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasCreate: null handle pointer");
  auto context = std::make_unique<cublasContext>();
  context->device = sonata::emu::device_for("cublasCreate");
  if (context->device < 0)
    return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasCreate: no device for this thread");
  *handle = context.release();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasDestroy: null handle");
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (!handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetWorkspace: null handle");
  // Documented: the workspace must be aligned to at least 256 bytes.
  if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0)
    return fail(CUBLAS_STATUS_INVALID_VALUE,
                "cublasSetWorkspace: workspace pointer is not 256-byte aligned");
  if (bytes > 0 && !workspace)
    return fail(CUBLAS_STATUS_INVALID_VALUE,
                "cublasSetWorkspace: null workspace with a size of " + std::to_string(bytes));
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetStream: null handle");
  handle->stream = stream;
  // Documented: setting the stream resets the workspace to cuBLAS's default pool.
  handle->workspace = nullptr;
  handle->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (!handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasGetStream: null handle");
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (!handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetPointerMode: null handle");
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  if (!handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasGetPointerMode: null handle");
  *mode = handle->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetMathMode: null handle");
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasGetMathMode: null handle");
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "error detected trying to check the license";
  }
  return "unknown error";
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t) {
  return gemm({handle, "cublasGemmEx", transa, transb, m,   n,   k, alpha, A, B, beta,       C,
               Atype,  Btype,          Ctype,  lda,    ldb, ldc, 0, 0,     0, 1, computeType});
}

cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa,
                               cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                               const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
                               const void* B, cudaDataType Btype, int64_t ldb, const void* beta,
                               void* C, cudaDataType Ctype, int64_t ldc,
                               cublasComputeType_t computeType, cublasGemmAlgo_t) {
  return gemm({handle,     "cublasGemmEx_64",
               transa,     transb,
               m,          n,
               k,          alpha,
               A,          B,
               beta,       C,
               Atype,      Btype,
               Ctype,      lda,
               ldb,        ldc,
               0,          0,
               0,          1,
               computeType});
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B,
                                          cudaDataType Btype, int ldb, long long int strideB,
                                          const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t) {
  return gemm({handle,     "cublasGemmStridedBatchedEx",
               transa,     transb,
               m,          n,
               k,          alpha,
               A,          B,
               beta,       C,
               Atype,      Btype,
               Ctype,      lda,
               ldb,        ldc,
               strideA,    strideB,
               strideC,    batchCount,
               computeType});
}

cublasStatus_t cublasGemmStridedBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,
    int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
    long long int strideA, const void* B, cudaDataType Btype, int64_t ldb, long long int strideB,
    const void* beta, void* C, cudaDataType Ctype, int64_t ldc, long long int strideC,
    int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t) {
  return gemm({handle,     "cublasGemmStridedBatchedEx_64",
               transa,     transb,
               m,          n,
               k,          alpha,
               A,          B,
               beta,       C,
               Atype,      Btype,
               Ctype,      lda,
               ldb,        ldc,
               strideA,    strideB,
               strideC,    batchCount,
               computeType});
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const float* alpha,
                              const float* A, int lda, const float* B, int ldb, const float* beta,
                              float* C, int ldc) {
  // cublasSgemm follows the handle's math mode: TF32 only under CUBLAS_TF32_TENSOR_OP_MATH.
  return gemm({handle,
               "cublasSgemm",
               transa,
               transb,
               m,
               n,
               k,
               alpha,
               A,
               B,
               beta,
               C,
               CUDA_R_32F,
               CUDA_R_32F,
               CUDA_R_32F,
               lda,
               ldb,
               ldc,
               0,
               0,
               0,
               1,
               CUBLAS_COMPUTE_32F});
}
