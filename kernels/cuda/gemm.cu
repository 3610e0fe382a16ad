// Row-major batched GEMM through cuBLAS's column-major cublasGemmStridedBatchedEx.
//
// A row-major matrix with leading dimension ld is, read column-major, its transpose with the
// same ld. So the row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T: swap
// the operands, swap m and n, and keep each operand's transpose flag.
#include "kernels/cuda/gemm.h"

#include <cublas_v2.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <utility>

#include "base/cuda_check.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/math_mode.h"
#include "base/nvtx.h"
#include "kernels/cuda/device_pool.h"

namespace sonata::kernels::cuda {
namespace {

inline constexpr int kMaxDevices = 64;
// cuBLAS's recommended workspace on Hopper; given per stream because kernels of one handle
// running concurrently on two streams must not share scratch memory.
inline constexpr size_t kWorkspaceBytes = size_t(32) << 20;

// One handle per device, created on first use and kept for the life of the process: it is
// never destroyed, because static destructors may run after the CUDA context is torn down.
// The mutex is held through each call, since setting the stream and workspace then
// enqueueing the GEMM must not interleave with another thread's call on the same handle.
struct DeviceBlas {
  std::mutex mutex;
  cublasHandle_t handle = nullptr;
  std::map<cudaStream_t, void*> workspaces;  // never freed: streams come and go rarely
};

DeviceBlas& device_blas(int device) {
  static std::array<DeviceBlas, kMaxDevices> per_device;
  SONATA_CHECK(device >= 0 && device < kMaxDevices, "sonata::cuda::gemm: device ", device,
               " is beyond the ", kMaxDevices, " devices the cuBLAS handle cache holds");
  return per_device[size_t(device)];
}

// The handle and the stream's workspace, made on first use (reserve_gemm_workspace makes
// them up front). Plain cudaMalloc, outside the pool: a workspace lives as long as the
// process; out of memory trims the pool and retries once. Called with blas.mutex held.
void*& ensure_workspace(DeviceBlas& blas, int device, cudaStream_t stream) {
  if (!blas.handle) CUBLAS_CHECK(cublasCreate(&blas.handle));
  void*& workspace = blas.workspaces[stream];
  if (!workspace)
    allocate_retrying("the cuBLAS workspace", kWorkspaceBytes, device,
                      [&] { return cudaMalloc(&workspace, kWorkspaceBytes); });
  return workspace;
}

// Called with blas.mutex held.
void bind(DeviceBlas& blas, int device, cudaStream_t stream) {
  void* workspace = ensure_workspace(blas, device, stream);
  // cublasSetStream resets the workspace to cuBLAS's default pool, so the stream's own
  // workspace is set after it, on every call.
  CUBLAS_CHECK(cublasSetStream(blas.handle, stream));
  CUBLAS_CHECK(cublasSetWorkspace(blas.handle, workspace, kWorkspaceBytes));
}

struct GemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  cublasMath_t math;
};

// f16 / bf16: tensor cores, fp32 accumulation, and DISALLOW_REDUCED_PRECISION_REDUCTION so
// that split-K partial sums are also reduced in fp32 rather than in the output type (cuBLAS
// allows the latter by default; the fp32 accumulation this file promises would then be
// only partly true). f32: the FAST_TF32 compute type only when base/math_mode.h allows TF32
// in GEMMs (--tf32 all); COMPUTE_32F with the default math never uses TF32.
GemmTypes gemm_types(DType dtype) {
  const auto fp32_reduction =
      cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  switch (dtype) {
    case DType::f16:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F, fp32_reduction};
    case DType::bf16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, fp32_reduction};
    case DType::f32:
      return {CUDA_R_32F,
              tf32_allowed_in_gemm() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
              CUBLAS_DEFAULT_MATH};
    case DType::f64:
      return {CUDA_R_64F, CUBLAS_COMPUTE_64F, CUBLAS_DEFAULT_MATH};
    default:
      break;
  }
  SONATA_CHECK(false, "sonata::cuda::gemm: dtype ", dtype_name(dtype),
               " is not supported (use f16, bf16, f32 or f64)");
  return {};
}

}  // namespace

void gemm(DType dtype, const GemmShape& shape, double alpha, const void* a, const void* b,
          double beta, void* c, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::gemm");
  const GemmTypes types = gemm_types(dtype);
  if (shape.m <= 0 || shape.n <= 0 || shape.batch <= 0) return;

  // Column-major view: C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m).
  const cublasOperation_t op_first = shape.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = shape.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  // cuBLAS checks leading dimensions even when k == 0 and nothing is read; an empty
  // product only scales C by beta, so any legal ld will do there.
  const int64_t first_rows = shape.trans_b ? shape.k : shape.n;
  const int64_t second_rows = shape.trans_a ? shape.m : shape.k;
  const int64_t ld_first = shape.k > 0 ? shape.ldb : std::max<int64_t>(first_rows, 1);
  const int64_t ld_second = shape.k > 0 ? shape.lda : std::max<int64_t>(second_rows, 1);

  // alpha/beta have the compute type: float for COMPUTE_32F, double for COMPUTE_64F.
  const float alpha_f = float(alpha), beta_f = float(beta);
  const bool is_f64 = types.compute == CUBLAS_COMPUTE_64F;
  const void* alpha_p = is_f64 ? static_cast<const void*>(&alpha) : &alpha_f;
  const void* beta_p = is_f64 ? static_cast<const void*>(&beta) : &beta_f;

  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  DeviceBlas& blas = device_blas(device);
  const std::lock_guard<std::mutex> lock(blas.mutex);
  bind(blas, device, stream);
  CUBLAS_CHECK(cublasSetMathMode(blas.handle, types.math));
  CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(
      blas.handle, op_first, op_second, shape.n, shape.m, shape.k, alpha_p, b, types.data, ld_first,
      shape.stride_b, a, types.data, ld_second, shape.stride_a, beta_p, c, types.data, shape.ldc,
      shape.stride_c, shape.batch, types.compute, CUBLAS_GEMM_DEFAULT));
}

void reserve_gemm_workspace(int device, cudaStream_t stream) {
  DeviceBlas& blas = device_blas(device);
  const std::lock_guard<std::mutex> lock(blas.mutex);
  ensure_workspace(blas, device, stream);
}

}  // namespace sonata::kernels::cuda
