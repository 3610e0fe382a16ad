// The CUDA log-mel front end (see mel.h). Element-wise steps are grid-stride kernels over the
// [rows, n_fft] frames, the [rows, bins] spectrum and the [rows, n_mels] output; the DFT is
// cuFFT, the filterbank kernels/cuda/gemm (cuBLAS); the per-clip statistics are one block per
// clip (or per (clip, mel)).
#include "kernels/cuda/mel.h"

#include <cufft.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <numbers>
#include <tuple>

#include "base/cuda_check.h"
#include "base/cuda_status.h"
#include "base/deferred_release.h"
#include "base/error.h"
#include "base/lru_cache.h"
#include "base/nvtx.h"
#include "kernels/cuda/device_pool.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {
namespace {

// Rows per cuFFT execution: batches of clips have any number of frames, and a plan per row
// count would build a plan (and its workspace) for nearly every batch. Rows are therefore
// padded to a multiple of a power of two (64 up to kMaxExecRows), and a plan for that many
// rows runs as often as needed: at most 7 plans per (device, stream, n_fft).
constexpr int64_t kMinExecRows = 64;
constexpr int64_t kMaxExecRows = 4096;
// Workspace sections start on 256-byte boundaries.
constexpr int64_t kAlignFloats = 64;
constexpr int kStatsThreads = 256;

int64_t exec_rows(int64_t rows) {
  return std::min(kMaxExecRows, int64_t(std::bit_ceil(uint64_t(std::max(rows, kMinExecRows)))));
}
int64_t padded_rows(int64_t rows) {
  const int64_t chunk = exec_rows(rows);
  return (rows + chunk - 1) / chunk * chunk;
}
int64_t align_floats(int64_t floats) {
  return (floats + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

// ---------------------------------------------------------------------------------------
// cuFFT plans

// (device, stream, n_fft, rows per execution). A plan's workspace is written by every
// execution, so a plan serves one stream only: two streams never share one.
using PlanKey = std::tuple<int, cudaStream_t, int64_t, int64_t>;
struct CachedPlan {
  cufftHandle handle = 0;
  cudaEvent_t last_use = nullptr;  // recorded on the plan's stream after its executions
  // The plan's work area, from the stream-ordered pool on the plan's stream (auto-allocation
  // off): cufftDestroy would otherwise cudaFree it, and cudaFree synchronises the whole
  // device, NCCL's kernels included. Freed with cudaFreeAsync instead.
  void* work_area = nullptr;
  cudaStream_t stream = nullptr;
};

// Bounded (set_fft_plan_cache_capacity); an evicted plan may still have executions queued,
// which use its work area, so it is destroyed only once its last_use event has completed.
// Nobody waits for that: each log_mel call destroys what is ready.
struct PlanCache {
  // Held from lookup through the executions: cufftSetStream and cufftExec on one plan must
  // not interleave with another thread's.
  std::mutex mutex;
  LruCache<PlanKey, CachedPlan> plans{kDefaultFftPlanCacheCapacity};
  DeferredReleases retired;
};

// Never destroyed: static destructors may run after the CUDA context is gone.
PlanCache& plan_cache() {
  static PlanCache* cache = new PlanCache;
  return *cache;
}

void retire(PlanCache& cache, const PlanKey& key, const CachedPlan& plan) {
  const int device = std::get<0>(key);
  cache.retired.add([event = plan.last_use] { return CUDA_QUERY(cudaEventQuery(event)); },
                    [device, plan] {
                      // Nothing may throw here. A failed release is reported and its status
                      // cleared (CUDA_RELEASE), so no later launch check reports it as its own;
                      // cuFFT's status is not a runtime error and leaves none behind. The plan
                      // belongs to its device, so that is made current.
                      int current = 0;
                      if (!CUDA_RELEASE(cudaGetDevice(&current))) return;
                      if (!CUDA_RELEASE(cudaSetDevice(device))) return;
                      // The plan's stream outlives it: plans are keyed by stream, and the
                      // engine's streams live as long as the process.
                      (void)cufftDestroy(plan.handle);  // frees no device memory of ours
                      if (plan.work_area) CUDA_RELEASE(cudaFreeAsync(plan.work_area, plan.stream));
                      CUDA_RELEASE(cudaEventDestroy(plan.last_use));
                      CUDA_RELEASE(cudaSetDevice(current));
                    });
}

// Called with cache.mutex held. Out-of-place R2C over `rows` rows of n_fft reals (distance
// n_fft) into rows of bins complex values (distance bins).
CachedPlan plan_for(PlanCache& cache, int device, cudaStream_t stream, int64_t n_fft,
                    int64_t rows) {
  const PlanKey key(device, stream, n_fft, rows);
  if (const CachedPlan* found = cache.plans.find(key)) return *found;
  int n[1] = {int(n_fft)};
  int inembed[1] = {int(n_fft)};
  int onembed[1] = {int(n_fft / 2 + 1)};
  CachedPlan plan;
  plan.stream = stream;
  CUFFT_CHECK(cufftCreate(&plan.handle));
  // Whatever fails below destroys what was made so far.
  struct Undo {
    CachedPlan& plan;
    bool armed = true;
    ~Undo() {
      if (!armed) return;
      (void)cufftDestroy(plan.handle);
      if (plan.work_area) CUDA_RELEASE(cudaFreeAsync(plan.work_area, plan.stream));
    }
  } undo{plan};
  CUFFT_CHECK(cufftSetAutoAllocation(plan.handle, 0));
  size_t planned = 0, work_bytes = 0;
  CUFFT_CHECK(cufftMakePlanMany(plan.handle, 1, n, inembed, 1, int(n_fft), onembed, 1,
                                int(n_fft / 2 + 1), CUFFT_R2C, int(rows), &planned));
  CUFFT_CHECK(cufftGetSize(plan.handle, &work_bytes));
  if (work_bytes > 0) {
    allocate_retrying("a cuFFT work area", work_bytes, device,
                      [&] { return cudaMallocAsync(&plan.work_area, work_bytes, stream); });
    CUFFT_CHECK(cufftSetWorkArea(plan.handle, plan.work_area));
  }
  CUDA_CHECK(cudaEventCreateWithFlags(&plan.last_use, cudaEventDisableTiming));
  undo.armed = false;
  for (const auto& [old_key, old_plan] : cache.plans.insert(key, plan))
    retire(cache, old_key, old_plan);
  return plan;
}

}  // namespace

void set_fft_plan_cache_capacity(size_t capacity) {
  SONATA_CHECK(capacity >= 1, "set_fft_plan_cache_capacity: capacity must be at least 1, got ",
               capacity);
  PlanCache& cache = plan_cache();
  const std::lock_guard<std::mutex> lock(cache.mutex);
  for (const auto& [key, plan] : cache.plans.set_capacity(capacity)) retire(cache, key, plan);
}

FftPlanCacheStats fft_plan_cache_stats() {
  PlanCache& cache = plan_cache();
  cache.retired.collect();
  const std::lock_guard<std::mutex> lock(cache.mutex);
  return {cache.plans.size(), cache.retired.pending()};
}

namespace {

// ---------------------------------------------------------------------------------------
// Kernels

struct FrameGeometry {
  int64_t n_fft, hop, pad, max_frames, clips, sample_stride;
  bool reflect;
};

// frames[row, n] = x_b[f * hop - pad + n] * window[n] for row = b * max_frames + f; zero rows
// for frames past a clip's count and for the padding rows up to the cuFFT batch.
__global__ void frame_kernel(int64_t n, FrameGeometry g, const float* __restrict__ samples,
                             const int64_t* __restrict__ lengths,
                             const int64_t* __restrict__ frame_counts,
                             const float* __restrict__ window, float* __restrict__ frames) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const int64_t row = i / g.n_fft, k = i - row * g.n_fft;
    const int64_t b = row / g.max_frames, f = row - b * g.max_frames;
    float value = 0.0f;
    if (b < g.clips && f < frame_counts[b]) {
      const int64_t length = lengths[b];
      int64_t at = f * g.hop - g.pad + k;
      bool inside = true;
      if (g.reflect) {
        // One mirror suffices: the clip is longer than the padding (checked on the host).
        if (at < 0) at = -at;
        if (at >= length) at = 2 * (length - 1) - at;
      } else {
        inside = at >= 0 && at < length;
      }
      if (inside) value = samples[b * g.sample_stride + at] * window[k];
    }
    frames[i] = value;
  }
}

// power[i] = |spectrum[i]|^p, as the CPU's store_power computes it from |X|^2.
__global__ void power_kernel(int64_t n, const cufftComplex* __restrict__ spectrum, float p,
                             float* __restrict__ power) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const cufftComplex x = spectrum[i];
    const float squared = x.x * x.x + x.y * x.y;
    power[i] = p == 2.0f ? squared : p == 1.0f ? sqrtf(squared) : powf(squared, 0.5f * p);
  }
}

struct LogParams {
  int64_t n_mels, max_frames;
  MelLogKind kind;
  float offset, db_scale, db_amin;
};

// In place on [rows, n_mels]: the log or dB of valid rows, 0 in rows past a clip's frames.
__global__ void log_kernel(int64_t n, LogParams p, const int64_t* __restrict__ frame_counts,
                           float* __restrict__ values) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const int64_t row = i / p.n_mels;
    const int64_t b = row / p.max_frames, f = row - b * p.max_frames;
    if (f >= frame_counts[b]) {
      values[i] = 0.0f;
      continue;
    }
    const float y = values[i];
    if (p.kind == MelLogKind::log)
      values[i] = logf(y + p.offset);
    else if (p.kind == MelLogKind::db)
      values[i] = logf(fmaxf(y, p.db_amin)) * p.db_scale;
  }
}

template <typename T, typename Combine>
__device__ T block_allreduce(T value, Combine combine, T* scratch) {
  value = warp_allreduce(value, combine);
  const int warp = int(threadIdx.x) / kWarpSize, lane = int(threadIdx.x) % kWarpSize;
  const int warps = int(blockDim.x) / kWarpSize;
  __syncthreads();  // scratch may still be read from a previous call
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  T total = scratch[0];
  for (int w = 1; w < warps; ++w) total = combine(total, scratch[w]);
  return total;
}

struct MaxF {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumD {
  __device__ double operator()(double a, double b) const { return a + b; }
};

// One block per clip: values below (clip maximum - top_db) raised to it (amplitude_to_DB).
__global__ void top_db_kernel(int64_t max_frames, int64_t n_mels, float top_db,
                              const int64_t* __restrict__ frame_counts, float* values) {
  __shared__ float scratch[kStatsThreads / kWarpSize];
  const int64_t b = blockIdx.x;
  float* clip = values + b * max_frames * n_mels;
  const int64_t count = frame_counts[b] * n_mels;
  float peak = -INFINITY;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) peak = fmaxf(peak, clip[i]);
  peak = block_allreduce(peak, MaxF{}, scratch);
  const float floor = peak - top_db;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) clip[i] = fmaxf(clip[i], floor);
}

// One block per group: (v - mean) / (std + 1e-5), std unbiased (torch.std), in double as the
// CPU's normalize(). Per utterance a group is a clip's frames * n_mels values; per feature
// one mel bin of one clip, n_mels apart.
__global__ void normalize_kernel(int64_t max_frames, int64_t n_mels, bool per_feature,
                                 const int64_t* __restrict__ frame_counts, float* values) {
  __shared__ double scratch[kStatsThreads / kWarpSize];
  const int64_t group = blockIdx.x;
  const int64_t b = per_feature ? group / n_mels : group;
  float* base = values + b * max_frames * n_mels + (per_feature ? group % n_mels : 0);
  const int64_t stride = per_feature ? n_mels : 1;
  const int64_t count = per_feature ? frame_counts[b] : frame_counts[b] * n_mels;
  if (count == 0) return;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += double(base[i * stride]);
  const double mean = block_allreduce(sum, SumD{}, scratch) / double(count);
  double squares = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    const double d = double(base[i * stride]) - mean;
    squares += d * d;
  }
  squares = block_allreduce(squares, SumD{}, scratch);
  const double std = count > 1 ? sqrt(squares / double(count - 1)) : 0.0;
  const double scale = 1.0 / (std + 1e-5);
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    base[i * stride] = float((double(base[i * stride]) - mean) * scale);
}

}  // namespace

int64_t mel_frame_count(const LogMelConfig& config, int64_t length) {
  const int64_t padded = config.center ? length + 2 * (config.n_fft / 2) : length;
  return padded < config.n_fft ? 0 : 1 + (padded - config.n_fft) / config.hop_length;
}

int64_t log_mel_workspace_floats(const LogMelConfig& config, int64_t rows) {
  const int64_t padded = padded_rows(rows);
  return align_floats(padded * config.n_fft) + 2 * padded * config.bins();
}

void log_mel(const LogMelConfig& config, const float* window, const float* filterbank,
             const float* samples, const LogMelBatch& batch, const int64_t* host_lengths,
             float* workspace, float* out, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::log_mel");
  const int64_t n_fft = config.n_fft, bins = config.bins(), n_mels = config.n_mels;
  SONATA_CHECK(n_fft >= 2 && config.hop_length >= 1 && n_mels >= 1,
               "sonata::cuda::log_mel: n_fft must be at least 2, hop_length and n_mels positive "
               "(got ",
               n_fft, ", ", config.hop_length, ", ", n_mels, ")");
  if (batch.clips == 0) return;
  SONATA_CHECK(batch.clips > 0 && batch.max_frames >= 1, "sonata::cuda::log_mel: a batch of ",
               batch.clips, " clips and ", batch.max_frames, " frames is not valid");
  const bool reflect = config.center && config.padding == MelPadding::reflect;
  for (int64_t b = 0; b < batch.clips; ++b) {
    const int64_t length = host_lengths[b], frames = mel_frame_count(config, length);
    SONATA_CHECK(length > 0 && length <= batch.sample_stride && frames >= 1 &&
                     frames <= batch.max_frames && (!reflect || length > n_fft / 2),
                 "sonata::cuda::log_mel: clip ", b, " of ", length,
                 " samples gives no frame for n_fft ", n_fft,
                 " with its padding, or does not fit the batch's ", batch.sample_stride,
                 " samples and ", batch.max_frames, " frames");
  }

  const int64_t rows = batch.clips * batch.max_frames;
  const int64_t chunk = exec_rows(rows), padded = padded_rows(rows);
  float* frames = workspace;
  auto* spectrum = reinterpret_cast<cufftComplex*>(workspace + align_floats(padded * n_fft));
  float* power = workspace;  // the frames are dead once transformed

  const FrameGeometry geometry{n_fft,
                               config.hop_length,
                               config.center ? n_fft / 2 : 0,
                               batch.max_frames,
                               batch.clips,
                               batch.sample_stride,
                               reflect};
  linear_kernel(frame_kernel, 0, stream, padded * n_fft, geometry, samples, batch.lengths,
                batch.frames, window, frames);
  CUDA_CHECK_LAUNCH();

  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  {
    PlanCache& cache = plan_cache();
    cache.retired.collect();  // destroys evicted plans whose executions have run
    const std::lock_guard<std::mutex> lock(cache.mutex);
    const CachedPlan plan = plan_for(cache, device, stream, n_fft, chunk);
    CUFFT_CHECK(cufftSetStream(plan.handle, stream));
    for (int64_t first = 0; first < padded; first += chunk)
      CUFFT_CHECK(cufftExecR2C(plan.handle, frames + first * n_fft, spectrum + first * bins));
    CUDA_CHECK(cudaEventRecord(plan.last_use, stream));
  }

  linear_kernel(power_kernel, 0, stream, rows * bins, spectrum, config.power, power);
  CUDA_CHECK_LAUNCH();

  GemmShape shape;
  shape.m = rows;
  shape.n = n_mels;
  shape.k = bins;
  shape.lda = bins;
  shape.ldb = n_mels;
  shape.ldc = n_mels;
  gemm(DType::f32, shape, 1.0, power, filterbank, 0.0, out, stream);

  const LogParams log_params{n_mels,
                             batch.max_frames,
                             config.log,
                             config.log_offset,
                             config.db_multiplier / float(std::numbers::ln10),
                             config.db_amin};
  linear_kernel(log_kernel, 0, stream, rows * n_mels, log_params, batch.frames, out);
  CUDA_CHECK_LAUNCH();

  if (config.log == MelLogKind::db && config.top_db >= 0.0f) {
    launch(top_db_kernel, unsigned(batch.clips), kStatsThreads, 0, stream, batch.max_frames, n_mels,
           config.top_db, batch.frames, out);
    CUDA_CHECK_LAUNCH();
  }
  if (config.normalize != MelNormalize::none) {
    const bool per_feature = config.normalize == MelNormalize::per_feature;
    const int64_t groups = per_feature ? batch.clips * n_mels : batch.clips;
    launch(normalize_kernel, unsigned(groups), kStatsThreads, 0, stream, batch.max_frames, n_mels,
           per_feature, batch.frames, out);
    CUDA_CHECK_LAUNCH();
  }
}

}  // namespace sonata::kernels::cuda
