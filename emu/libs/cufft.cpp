// cuFFT on the CPU: 1-d plans (batched, basic or advanced layout) of R2C, C2R and C2C, a
// work area per plan that every execution writes (the library's own from cudaMalloc, or the
// caller's after cufftSetAutoAllocation(0) + cufftSetWorkArea), and executions as work on
// the plan's stream computed as a direct DFT in double precision. In place, real rows of the
// basic layout are padded to 2 * (n/2 + 1) reals; out of place, C2R overwrites its input.
#include <cufft.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <string>
#include <vector>

#include "emu/libs/internal.h"

namespace {

struct Plan {
  int device = 0;
  cudaStream_t stream = nullptr;
  bool made = false;
  bool auto_allocate = true;
  void* work_area = nullptr;
  bool work_area_owned = false;  // auto-allocated: freed (device-synchronising) on destroy
  size_t work_size = 0;
  cufftType type = CUFFT_R2C;
  int64_t n = 0, batch = 0;
  int64_t istride = 1, idist = 0, ostride = 1, odist = 0;
  bool basic_layout = true;
};

std::mutex plans_mutex;
std::map<cufftHandle, std::shared_ptr<Plan>>& plans() {
  static auto* table = new std::map<cufftHandle, std::shared_ptr<Plan>>();
  return *table;
}
cufftHandle next_handle = 1;

cufftResult fail(cufftResult status, const std::string& message) {
  sonata::emu::library_log("cuFFT", message);
  return status;
}

std::shared_ptr<Plan> find(cufftHandle handle) {
  const std::lock_guard<std::mutex> lock(plans_mutex);
  const auto at = plans().find(handle);
  return at == plans().end() ? nullptr : at->second;
}

bool real_input(cufftType t) {
  return t == CUFFT_R2C || t == CUFFT_D2Z;
}
bool real_output(cufftType t) {
  return t == CUFFT_C2R || t == CUFFT_Z2D;
}
bool is_double(cufftType t) {
  return t == CUFFT_D2Z || t == CUFFT_Z2D || t == CUFFT_Z2Z;
}
bool valid_type(cufftType t) {
  return t == CUFFT_R2C || t == CUFFT_C2R || t == CUFFT_C2C || t == CUFFT_D2Z || t == CUFFT_Z2D ||
         t == CUFFT_Z2Z;
}

// Elements per row of input and output: n reals, or n/2+1 complex values on the complex side
// of a real transform, or n complex values.
int64_t input_elems(const Plan& p) {
  return real_output(p.type) ? p.n / 2 + 1 : p.n;
}
int64_t output_elems(const Plan& p) {
  return real_input(p.type) ? p.n / 2 + 1 : p.n;
}
size_t real_bytes(const Plan& p) {
  return is_double(p.type) ? 8 : 4;
}
size_t input_elem_bytes(const Plan& p) {
  return real_input(p.type) ? real_bytes(p) : 2 * real_bytes(p);
}
size_t output_elem_bytes(const Plan& p) {
  return real_output(p.type) ? real_bytes(p) : 2 * real_bytes(p);
}

// The emulated plan's scratch: one complex row per batch entry, as a real plan would ask
// for a non-trivial size (never 0, so a missing work area always shows).
size_t work_size_of(const Plan& p) {
  const size_t bytes = size_t(p.batch) * size_t(p.n) * 2 * real_bytes(p);
  return (bytes + 255) / 256 * 256;
}

cufftResult configure(Plan& p, int rank, const int* n, const int* inembed, int istride, int idist,
                      const int* onembed, int ostride, int odist, cufftType type, int batch,
                      const char* call) {
  if (!valid_type(type)) return fail(CUFFT_INVALID_TYPE, std::string(call) + ": invalid type");
  if (rank != 1)
    return fail(CUFFT_NOT_SUPPORTED, std::string(call) +
                                         ": the emulator plans 1-d transforms only (rank " +
                                         std::to_string(rank) + ")");
  if (!n || n[0] < 1 || batch < 1)
    return fail(CUFFT_INVALID_SIZE, std::string(call) + ": size " + std::to_string(n ? n[0] : 0) +
                                        ", batch " + std::to_string(batch) + " must be positive");
  p.type = type;
  p.n = n[0];
  p.batch = batch;
  // cuFFT ignores the strides and distances when either embed array is null.
  p.basic_layout = !inembed || !onembed;
  if (p.basic_layout) {
    p.istride = p.ostride = 1;
    p.idist = input_elems(p);
    p.odist = output_elems(p);
  } else {
    if (istride < 1 || ostride < 1 || idist < 0 || odist < 0)
      return fail(CUFFT_INVALID_VALUE, std::string(call) + ": negative stride or distance");
    p.istride = istride;
    p.idist = idist;
    p.ostride = ostride;
    p.odist = odist;
  }
  p.work_size = work_size_of(p);
  return CUFFT_SUCCESS;
}

cufftResult make(cufftHandle handle, int rank, int* n, int* inembed, int istride, int idist,
                 int* onembed, int ostride, int odist, cufftType type, int batch, size_t* work_size,
                 const char* call) {
  const std::shared_ptr<Plan> plan = find(handle);
  if (!plan) return fail(CUFFT_INVALID_PLAN, std::string(call) + ": unknown plan");
  if (plan->made)
    return fail(CUFFT_INVALID_PLAN, std::string(call) + ": plan " + std::to_string(handle) +
                                        " was already made (create a new one)");
  const cufftResult configured = configure(*plan, rank, n, inembed, istride, idist, onembed,
                                           ostride, odist, type, batch, call);
  if (configured != CUFFT_SUCCESS) return configured;
  plan->device = sonata::emu::device_for(call);
  if (plan->device < 0)
    return fail(CUFFT_INVALID_DEVICE, std::string(call) + ": no device for this thread");
  if (plan->auto_allocate) {
    if (cudaMalloc(&plan->work_area, plan->work_size) != cudaSuccess)
      return fail(CUFFT_ALLOC_FAILED, std::string(call) + ": cudaMalloc of the " +
                                          std::to_string(plan->work_size) +
                                          "-byte work area failed");
    plan->work_area_owned = true;
    ++sonata::emu::library_counters().cufft_auto_allocations;
  }
  plan->made = true;
  if (work_size) *work_size = plan->work_size;
  return CUFFT_SUCCESS;
}

// Frees an auto-allocated work area: cudaFree synchronises the device on a card, so this
// does too (on the plan's device).
void release_work_area(Plan& plan) {
  if (!plan.work_area_owned) return;
  int current = 0;
  cudaGetDevice(&current);
  cudaSetDevice(plan.device);
  cudaDeviceSynchronize();
  ++sonata::emu::library_counters().cufft_device_syncs;
  cudaFree(plan.work_area);
  cudaSetDevice(current);
  plan.work_area = nullptr;
  plan.work_area_owned = false;
}

struct Complex {
  double re, im;
};

// One row's DFT. `in(i)` gives input element i as complex (reals have im 0); `sign` -1 is
// cuFFT's forward direction. Twiddles come from an exact index (k * t mod n).
void dft_row(int64_t n, int sign, const std::vector<Complex>& in, std::vector<Complex>& out,
             const std::vector<Complex>& twiddle, int64_t out_count) {
  for (int64_t k = 0; k < out_count; ++k) {
    double re = 0, im = 0;
    int64_t index = 0;
    for (int64_t t = 0; t < n; ++t) {
      const Complex w = twiddle[size_t(index)];
      const double wim = sign * w.im;
      re += in[size_t(t)].re * w.re - in[size_t(t)].im * wim;
      im += in[size_t(t)].re * wim + in[size_t(t)].im * w.re;
      index += k;
      if (index >= n) index -= n;
    }
    out[size_t(k)] = {re, im};
  }
}

cufftResult exec(cufftHandle handle, void* idata, void* odata, int direction, cufftType expected_a,
                 cufftType expected_b, const char* call) {
  const std::shared_ptr<Plan> found = find(handle);
  if (!found || !found->made)
    return fail(CUFFT_INVALID_PLAN, std::string(call) + ": plan " + std::to_string(handle) +
                                        (found ? " was created but never made" : " is unknown"));
  Plan p = *found;
  const bool in_place = idata == odata;
  // cuFFT's data layout: an in-place real transform keeps each row's complex side in the
  // same bytes as its real side, so the basic layout's real rows are padded to
  // 2 * (n/2 + 1) reals (FFTW's in-place layout); out of place they are n reals apart.
  if (p.basic_layout && in_place) {
    if (real_input(p.type)) p.idist = 2 * (p.n / 2 + 1);
    if (real_output(p.type)) p.odist = 2 * (p.n / 2 + 1);
  }
  // An out-of-place complex-to-real transform overwrites its input (cuFFT's documentation:
  // the input of C2R/Z2D is not preserved), so a caller that reads it again must see that.
  const bool clobbers_input = real_output(p.type) && !in_place;
  if (p.type != expected_a && p.type != expected_b)
    return fail(CUFFT_INVALID_TYPE, std::string(call) + ": plan " + std::to_string(handle) +
                                        " has type " + std::to_string(int(p.type)) +
                                        ", not this execution's");
  if (!p.work_area)
    return fail(CUFFT_NO_WORKSPACE,
                std::string(call) + ": plan " + std::to_string(handle) +
                    " has auto-allocation off and no work area (cufftSetWorkArea with the " +
                    std::to_string(p.work_size) + " bytes cufftGetSize reports)");
  const int stream_device = sonata::emu::stream_device_for(p.stream, call);
  if (stream_device != p.device)
    return fail(CUFFT_INVALID_DEVICE, std::string(call) + ": plan " + std::to_string(handle) +
                                          " was made on device " + std::to_string(p.device) +
                                          " but runs on a stream of device " +
                                          std::to_string(stream_device));
  if (!idata || !odata) return fail(CUFFT_INVALID_VALUE, std::string(call) + ": null data");

  sonata::emu::Work work;
  work.name = call;
  work.kind = sonata::emu::WorkKind::library;
  // 5 n log2(n) per complex transform (half for a real one), as FFT benchmarks count.
  const bool real = p.type != CUFFT_C2C && p.type != CUFFT_Z2Z;
  work.cost = {.flops = (real ? 2.5 : 5.0) * double(p.n) *
                        std::log2(double(std::max<int64_t>(p.n, 2))) * double(p.batch),
               .math = "memory",
               .library = "cufft"};  // bytes: the ranges below
  const int64_t in_count = input_elems(p), out_count = output_elems(p);
  for (int64_t b = 0; b < p.batch; ++b) {
    // Elements `stride` apart: one line of one element each, ld = stride.
    sonata::emu::add_strided(
        work.reads, static_cast<const char*>(idata) + b * p.idist * int64_t(input_elem_bytes(p)),
        p.istride == 1 ? in_count : 1, p.istride == 1 ? 1 : in_count, p.istride,
        int64_t(input_elem_bytes(p)));
    sonata::emu::add_strided(
        work.writes, static_cast<const char*>(odata) + b * p.odist * int64_t(output_elem_bytes(p)),
        p.ostride == 1 ? out_count : 1, p.ostride == 1 ? 1 : out_count, p.ostride,
        int64_t(output_elem_bytes(p)));
  }
  if (clobbers_input) work.writes.insert(work.writes.end(), work.reads.begin(), work.reads.end());
  work.writes.push_back({p.work_area, p.work_size});
  const int sign = (p.type == CUFFT_C2C || p.type == CUFFT_Z2Z)
                       ? (direction == CUFFT_INVERSE ? 1 : -1)
                   : real_output(p.type) ? 1
                                         : -1;
  work.run = [p, idata, odata, sign, in_count, out_count, clobbers_input] {
    std::vector<Complex> twiddle(size_t(p.n));
    for (int64_t t = 0; t < p.n; ++t) {
      const double angle = 2 * std::numbers::pi * double(t) / double(p.n);
      twiddle[size_t(t)] = {std::cos(angle), std::sin(angle)};
    }
    const bool dbl = is_double(p.type);
    auto load_real = [&](const void* base, int64_t i) {
      return dbl ? static_cast<const double*>(base)[i] : double(static_cast<const float*>(base)[i]);
    };
    auto store_real = [&](void* base, int64_t i, double v) {
      if (dbl)
        static_cast<double*>(base)[i] = v;
      else
        static_cast<float*>(base)[i] = float(v);
    };
    // All rows are read before any is written: in-place transforms overwrite their input.
    std::vector<std::vector<Complex>> results(size_t(p.batch));
    std::vector<Complex> row(size_t(p.n)), out(size_t(p.n));
    for (int64_t b = 0; b < p.batch; ++b) {
      for (int64_t t = 0; t < p.n; ++t) {
        if (real_input(p.type)) {
          row[size_t(t)] = {load_real(idata, b * p.idist + t * p.istride), 0.0};
        } else if (real_output(p.type)) {
          // Hermitian input: the missing half is the conjugate of the stored one.
          const int64_t k = t < in_count ? t : p.n - t;
          const int64_t at = 2 * (b * p.idist + k * p.istride);
          const double re = load_real(idata, at), im = load_real(idata, at + 1);
          row[size_t(t)] = {re, t < in_count ? im : -im};
        } else {
          const int64_t at = 2 * (b * p.idist + t * p.istride);
          row[size_t(t)] = {load_real(idata, at), load_real(idata, at + 1)};
        }
      }
      dft_row(p.n, sign, row, out, twiddle, real_output(p.type) ? p.n : out_count);
      results[size_t(b)].assign(out.begin(), out.begin() + (real_output(p.type) ? p.n : out_count));
    }
    // What a card leaves in the input of an out-of-place C2R is its intermediate data; NaN
    // here, so that any later read of it shows.
    if (clobbers_input) {
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t k = 0; k < in_count; ++k) {
          const int64_t at = 2 * (b * p.idist + k * p.istride);
          store_real(idata, at, NAN);
          store_real(idata, at + 1, NAN);
        }
    }
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t k = 0; k < out_count; ++k) {
        const Complex v = results[size_t(b)][size_t(k)];
        if (real_output(p.type)) {
          store_real(odata, b * p.odist + k * p.ostride, v.re);
        } else {
          const int64_t at = 2 * (b * p.odist + k * p.ostride);
          store_real(odata, at, v.re);
          store_real(odata, at + 1, v.im);
        }
      }
  };
  const cudaError_t queued = sonata::emu::enqueue(p.stream, std::move(work));
  if (queued != cudaSuccess)
    return fail(CUFFT_EXEC_FAILED, std::string(call) + ": could not enqueue (CUDA error " +
                                       std::to_string(int(queued)) + ")");
  return CUFFT_SUCCESS;
}

}  // namespace

cufftResult cufftCreate(cufftHandle* handle) {
  if (!handle) return fail(CUFFT_INVALID_VALUE, "cufftCreate: null handle pointer");
  const std::lock_guard<std::mutex> lock(plans_mutex);
  *handle = next_handle++;
  plans()[*handle] = std::make_shared<Plan>();
  return CUFFT_SUCCESS;
}

cufftResult cufftDestroy(cufftHandle handle) {
  std::shared_ptr<Plan> plan;
  {
    const std::lock_guard<std::mutex> lock(plans_mutex);
    const auto at = plans().find(handle);
    if (at == plans().end())
      return fail(CUFFT_INVALID_PLAN, "cufftDestroy: unknown plan " + std::to_string(handle));
    plan = at->second;
    plans().erase(at);
  }
  release_work_area(*plan);
  return CUFFT_SUCCESS;
}

cufftResult cufftPlan1d(cufftHandle* handle, int nx, cufftType type, int batch) {
  return cufftPlanMany(handle, 1, &nx, nullptr, 1, 0, nullptr, 1, 0, type, batch);
}

cufftResult cufftPlanMany(cufftHandle* handle, int rank, int* n, int* inembed, int istride,
                          int idist, int* onembed, int ostride, int odist, cufftType type,
                          int batch) {
  const cufftResult created = cufftCreate(handle);
  if (created != CUFFT_SUCCESS) return created;
  const cufftResult made = make(*handle, rank, n, inembed, istride, idist, onembed, ostride, odist,
                                type, batch, nullptr, "cufftPlanMany");
  if (made != CUFFT_SUCCESS) {
    cufftDestroy(*handle);
    *handle = 0;
  }
  return made;
}

cufftResult cufftMakePlan1d(cufftHandle plan, int nx, cufftType type, int batch, size_t* workSize) {
  return make(plan, 1, &nx, nullptr, 1, 0, nullptr, 1, 0, type, batch, workSize, "cufftMakePlan1d");
}

cufftResult cufftMakePlanMany(cufftHandle plan, int rank, int* n, int* inembed, int istride,
                              int idist, int* onembed, int ostride, int odist, cufftType type,
                              int batch, size_t* workSize) {
  return make(plan, rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch,
              workSize, "cufftMakePlanMany");
}

cufftResult cufftEstimateMany(int rank, int* n, int* inembed, int istride, int idist, int* onembed,
                              int ostride, int odist, cufftType type, int batch, size_t* workSize) {
  Plan p;
  const cufftResult configured = configure(p, rank, n, inembed, istride, idist, onembed, ostride,
                                           odist, type, batch, "cufftEstimateMany");
  if (configured == CUFFT_SUCCESS && workSize) *workSize = p.work_size;
  return configured;
}

cufftResult cufftGetSizeMany(cufftHandle plan, int rank, int* n, int* inembed, int istride,
                             int idist, int* onembed, int ostride, int odist, cufftType type,
                             int batch, size_t* workArea) {
  if (!find(plan)) return fail(CUFFT_INVALID_PLAN, "cufftGetSizeMany: unknown plan");
  return cufftEstimateMany(rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch,
                           workArea);
}

cufftResult cufftGetSize(cufftHandle handle, size_t* workSize) {
  const std::shared_ptr<Plan> plan = find(handle);
  if (!plan || !plan->made)
    return fail(CUFFT_INVALID_PLAN, "cufftGetSize: plan " + std::to_string(handle) +
                                        (plan ? " was never made" : " is unknown"));
  if (!workSize) return fail(CUFFT_INVALID_VALUE, "cufftGetSize: null size pointer");
  *workSize = plan->work_size;
  return CUFFT_SUCCESS;
}

cufftResult cufftSetWorkArea(cufftHandle handle, void* workArea) {
  const std::shared_ptr<Plan> plan = find(handle);
  if (!plan) return fail(CUFFT_INVALID_PLAN, "cufftSetWorkArea: unknown plan");
  // Documented: an auto-allocated work area is freed when the caller sets its own.
  release_work_area(*plan);
  plan->work_area = workArea;
  return CUFFT_SUCCESS;
}

cufftResult cufftSetAutoAllocation(cufftHandle handle, int autoAllocate) {
  const std::shared_ptr<Plan> plan = find(handle);
  if (!plan) return fail(CUFFT_INVALID_PLAN, "cufftSetAutoAllocation: unknown plan");
  // Takes effect at the next cufftMakePlan*; a made plan keeps the work area it has.
  plan->auto_allocate = autoAllocate != 0;
  return CUFFT_SUCCESS;
}

cufftResult cufftSetStream(cufftHandle handle, cudaStream_t stream) {
  const std::shared_ptr<Plan> plan = find(handle);
  if (!plan) return fail(CUFFT_INVALID_PLAN, "cufftSetStream: unknown plan");
  plan->stream = stream;
  return CUFFT_SUCCESS;
}

cufftResult cufftGetVersion(int* version) {
  *version = CUFFT_VERSION;
  return CUFFT_SUCCESS;
}

cufftResult cufftExecR2C(cufftHandle plan, cufftReal* idata, cufftComplex* odata) {
  return exec(plan, idata, odata, CUFFT_FORWARD, CUFFT_R2C, CUFFT_R2C, "cufftExecR2C");
}
cufftResult cufftExecC2R(cufftHandle plan, cufftComplex* idata, cufftReal* odata) {
  return exec(plan, idata, odata, CUFFT_INVERSE, CUFFT_C2R, CUFFT_C2R, "cufftExecC2R");
}
cufftResult cufftExecC2C(cufftHandle plan, cufftComplex* idata, cufftComplex* odata,
                         int direction) {
  if (direction != CUFFT_FORWARD && direction != CUFFT_INVERSE)
    return fail(CUFFT_INVALID_VALUE,
                "cufftExecC2C: direction must be CUFFT_FORWARD or CUFFT_INVERSE");
  return exec(plan, idata, odata, direction, CUFFT_C2C, CUFFT_C2C, "cufftExecC2C");
}
