#pragma once
// Shared by the kernels/cuda/*.cu files only: how a kernel is launched over n items, which
// device type stands for each DType, the templated-lambda dtype dispatchers, conversions
// to and from the compute type, 16-byte packs and warp reductions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "base/cuda_check.h"
#include "base/dtype.h"
#include "base/error.h"
#if defined(SONATA_CUDA_EMU)
#include "emu/exec/kernel_name.h"
#include "emu/exec/launch.h"
#endif

namespace sonata::kernels::cuda {

// ---------------------------------------------------------------------------------------
// Launching

inline constexpr int kBlockSize = 256;
// Grid-stride loops cover any n, so capping the grid only trades blocks for loop trips; it
// keeps gridDim.x far from its limit and the per-block start-up cost bounded.
inline constexpr int64_t kMaxBlocks = int64_t(1) << 20;

inline unsigned blocks_for(int64_t items, int block_size = kBlockSize) {
  return unsigned(std::clamp<int64_t>((items + block_size - 1) / block_size, 1, kMaxBlocks));
}

// Every kernel launch of the project goes through here: `kernel<<<grid, block, shared_bytes,
// stream>>>(args...)` under nvcc; under the CPU emulator (SONATA_CUDA_EMU) the same launch
// handed to the emulator's executor, which checks the configuration as the card does and
// runs the grid in stream order. The arguments are converted to the kernel's parameter types
// and copied here, at the launch, as CUDA copies them into the parameter block. The caller
// checks the launch with CUDA_CHECK_LAUNCH() so that an error names the launcher's line.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
            cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launch: wrong number of kernel arguments");
#if defined(SONATA_CUDA_EMU)
  std::tuple<std::decay_t<Params>...> parameters(std::forward<Args>(args)...);
  // The error, if any, is the thread's last error, read by CUDA_CHECK_LAUNCH().
  (void)::sonata::emu::launch_kernel(
      reinterpret_cast<const void*>(kernel),
      ::sonata::emu::kernel_name(reinterpret_cast<const void*>(kernel)), grid, block, shared_bytes,
      stream, [kernel, parameters] { std::apply(kernel, parameters); });
#else
  // clang-format splits the >>> in this branch.
  // clang-format off
  kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Args>(args)...);
  // clang-format on
#endif
}

// tiny-cuda-nn's linear_kernel: enough blocks for n items (capped), the kernel walks them
// with a grid-stride loop and receives n as its first argument. Nothing is launched for
// n == 0, since an empty grid is an invalid configuration. The caller checks the launch
// with CUDA_CHECK_LAUNCH().
template <typename... Params, typename... Args>
void linear_kernel(void (*kernel)(Params...), uint32_t shared_bytes, cudaStream_t stream, int64_t n,
                   Args&&... args) {
  if (n <= 0) return;
  launch(kernel, dim3(blocks_for(n)), dim3(kBlockSize), shared_bytes, stream, n,
         std::forward<Args>(args)...);
}

// int64 so that grids past 2^31 threads and tensors past 2^31 elements index correctly.
__device__ __forceinline__ int64_t thread_index() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t thread_count() {
  return int64_t(gridDim.x) * blockDim.x;
}

// ---------------------------------------------------------------------------------------
// Types

template <DType D>
struct DeviceTypeOf;
template <>
struct DeviceTypeOf<DType::f16> {
  using type = __half;
};
template <>
struct DeviceTypeOf<DType::bf16> {
  using type = __nv_bfloat16;
};
template <>
struct DeviceTypeOf<DType::f32> {
  using type = float;
};
template <>
struct DeviceTypeOf<DType::f64> {
  using type = double;
};
template <>
struct DeviceTypeOf<DType::i32> {
  using type = int32_t;
};
template <>
struct DeviceTypeOf<DType::i64> {
  using type = int64_t;
};
template <>
struct DeviceTypeOf<DType::u8> {
  using type = uint8_t;
};
template <>
struct DeviceTypeOf<DType::boolean> {
  using type = bool;
};
template <DType D>
using device_t = typename DeviceTypeOf<D>::type;

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// The type arithmetic happens in, as on the CPU (kernels/cpu/dispatch.h): float for half
// types and f32, double for f64, int64 for integers and bool.
template <typename T>
struct ComputeOf {
  using type = std::conditional_t<std::is_integral_v<T>, int64_t, T>;
};
template <>
struct ComputeOf<__half> {
  using type = float;
};
template <>
struct ComputeOf<__nv_bfloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename ComputeOf<T>::type;

// Float-only accumulator: what reductions, softmax and Philox draw in.
template <typename T>
using float_compute_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
__host__ __device__ __forceinline__ compute_t<T> load(T value) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(value);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(value);
  } else {
    return compute_t<T>(value);
  }
}

// Half types round once from float (round to nearest even), exactly as base/half.h does on
// the host; a double goes through float first, as the CPU's store<Half>(double) does.
template <typename T, typename C>
__host__ __device__ __forceinline__ T store(C value) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(float(value));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(float(value));
  } else {
    return static_cast<T>(value);
  }
}

// ---------------------------------------------------------------------------------------
// Dispatch: body.template operator()<T>() with T the device type of `dtype`.

template <typename F>
void dispatch_f16_bf16_f32_f64(DType dtype, const char* kernel, F&& body) {
  switch (dtype) {
    case DType::f16:
      return body.template operator()<__half>();
    case DType::bf16:
      return body.template operator()<__nv_bfloat16>();
    case DType::f32:
      return body.template operator()<float>();
    case DType::f64:
      return body.template operator()<double>();
    default:
      break;
  }
  SONATA_CHECK(false, "sonata::cuda::", kernel, ": dtype ", dtype_name(dtype),
               " is not supported (use f16, bf16, f32 or f64)");
}

// Every dtype: copies, fills, comparisons, and binary ops (which, as on the CPU, also take
// integers and bool, computing in int64).
template <typename F>
void dispatch_all(DType dtype, const char* kernel, F&& body) {
  switch (dtype) {
    case DType::f16:
      return body.template operator()<__half>();
    case DType::bf16:
      return body.template operator()<__nv_bfloat16>();
    case DType::f32:
      return body.template operator()<float>();
    case DType::f64:
      return body.template operator()<double>();
    case DType::i32:
      return body.template operator()<int32_t>();
    case DType::i64:
      return body.template operator()<int64_t>();
    case DType::u8:
      return body.template operator()<uint8_t>();
    case DType::boolean:
      return body.template operator()<bool>();
  }
  SONATA_CHECK(false, "sonata::cuda::", kernel, ": unknown dtype ", int(dtype));
}

// Kernels that only move elements (index_select, gather) need the element's size, not its
// type: one instantiation per width serves every dtype of that width.
template <typename F>
void dispatch_bits(DType dtype, const char* kernel, F&& body) {
  switch (dtype_size(dtype)) {
    case 1:
      return body.template operator()<uint8_t>();
    case 2:
      return body.template operator()<uint16_t>();
    case 4:
      return body.template operator()<uint32_t>();
    case 8:
      return body.template operator()<uint64_t>();
    default:
      break;
  }
  SONATA_CHECK(false, "sonata::cuda::", kernel, ": dtype ", dtype_name(dtype),
               " has no element width this kernel moves");
}

// body.template operator()<kValue>() for the enumerator equal to `value`.
template <typename Enum, Enum... kValues, typename F>
void dispatch_enum(Enum value, const char* kernel, F&& body) {
  const bool found =
      ((value == kValues ? (body.template operator()<kValues>(), true) : false) || ...);
  SONATA_CHECK(found, "sonata::cuda::", kernel, ": unknown op ", int(value));
}

// ---------------------------------------------------------------------------------------
// 16-byte packs: the vectorised contiguous paths load and store N elements in one
// instruction when every pointer is aligned to the pack.

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// Elements per 16-byte access for the widest of the types involved.
template <typename... Ts>
inline constexpr int kPackWidth = int(16 / std::max({sizeof(Ts)...}));

// The unsigned type of a pack's size: packs move through these so that nvcc emits one
// vector access (ld.global.v4.u32 for 16 bytes) instead of N scalar ones.
template <size_t kBytes>
struct RawOf;
template <>
struct RawOf<1> {
  using type = unsigned char;
};
template <>
struct RawOf<2> {
  using type = unsigned short;
};
template <>
struct RawOf<4> {
  using type = unsigned int;
};
template <>
struct RawOf<8> {
  using type = uint2;
};
template <>
struct RawOf<16> {
  using type = uint4;
};

// Pack number `index` from an aligned array, a plain (coherent) load: the array may be the
// kernel's own output (in-place maps, softmax, batch norm, dropout).
template <int N, typename T>
__device__ __forceinline__ Pack<T, N> load_pack(const T* base, int64_t index) {
  using Raw = typename RawOf<sizeof(Pack<T, N>)>::type;
  const Raw raw = reinterpret_cast<const Raw*>(base)[index];
  Pack<T, N> pack;
  memcpy(&pack, &raw, sizeof(raw));
  return pack;
}

// The same through the read-only data cache (__ldg, ld.global.nc), which the CUDA
// Programming Guide and the PTX ISA allow only for data that is read-only for the whole
// kernel: only for arrays the kernel never writes through any pointer (the batch-norm
// reductions' inputs, whose outputs are separate buffers), never where input and output
// may alias.
template <int N, typename T>
__device__ __forceinline__ Pack<T, N> load_pack_readonly(const T* base, int64_t index) {
  using Raw = typename RawOf<sizeof(Pack<T, N>)>::type;
  const Raw raw = __ldg(reinterpret_cast<const Raw*>(base) + index);
  Pack<T, N> pack;
  memcpy(&pack, &raw, sizeof(raw));
  return pack;
}

template <int N, typename T>
__device__ __forceinline__ void store_pack(T* base, int64_t index, const Pack<T, N>& pack) {
  using Raw = typename RawOf<sizeof(Pack<T, N>)>::type;
  Raw raw;
  memcpy(&raw, &pack, sizeof(raw));
  reinterpret_cast<Raw*>(base)[index] = raw;
}

inline bool is_aligned(const void* pointer, size_t bytes) {
  return reinterpret_cast<uintptr_t>(pointer) % bytes == 0;
}

// ---------------------------------------------------------------------------------------
// Warp reductions

inline constexpr unsigned kFullWarp = 0xffffffffu;
inline constexpr int kWarpSize = 32;

template <typename V>
__device__ __forceinline__ V shfl_xor(V value, int lane_mask) {
  return __shfl_xor_sync(kFullWarp, value, lane_mask);
}

// Butterfly: every lane ends with the result, and since each step combines the same two
// values on both partners, a commutative `combine` leaves all 32 lanes bitwise equal.
template <typename V, typename Combine>
__device__ __forceinline__ V warp_allreduce(V value, Combine combine) {
#pragma unroll
  for (int lane_mask = kWarpSize / 2; lane_mask > 0; lane_mask >>= 1)
    value = combine(value, shfl_xor(value, lane_mask));
  return value;
}

}  // namespace sonata::kernels::cuda
