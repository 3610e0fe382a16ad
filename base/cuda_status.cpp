#include "base/cuda_status.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/cuda_check.h"
#include "base/error.h"

namespace sonata {
namespace {
// A context that fails every release would otherwise print one line per freed tensor.
constexpr int kReleaseReportsShown = 20;
std::atomic<int> g_release_reports{0};
}  // namespace

bool query_finished(cudaError_t status, const char* call, const char* file, int line,
                    TakeLastError take_last_error) {
  if (status == cudaSuccess) return true;
  if (status == cudaErrorNotReady) {
    // The slot holds the newest error, the NotReady just produced; anything else found there
    // is a real failure that must not be dropped with it.
    const cudaError_t last = take_last_error();
    if (last != cudaSuccess && last != cudaErrorNotReady)
      fail_library("CUDA", file, line, "cudaGetLastError after a query", describe_cuda(last));
    return false;
  }
  fail_library("CUDA", file, line, call, describe_cuda(status));
}

bool release_succeeded(cudaError_t status, const char* call, const char* file, int line,
                       TakeLastError take_last_error) {
  if (status == cudaSuccess) return true;
  take_last_error();
  if (status == cudaErrorCudartUnloading) return false;
  const int shown = g_release_reports++;
  if (shown < kReleaseReportsShown) {
    const char* slash = std::strrchr(file, '/');
    std::string where = str(slash ? slash + 1 : file, ":", line);
    if (error_rank() >= 0) where += str(" [rank ", error_rank(), "]");
    std::fprintf(stderr, "sonata: CUDA release failed at %s: %s -> %s%s\n", where.c_str(), call,
                 describe_cuda(status),
                 shown + 1 == kReleaseReportsShown ? " (further release failures not shown)" : "");
  }
  return false;
}

}  // namespace sonata
