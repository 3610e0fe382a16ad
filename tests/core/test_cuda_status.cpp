// Query and release statuses (base/cuda_status.h) with injected cudaError_t values and
// a fake of the thread's last-error slot, so that no GPU is needed: a NotReady answer must not
// stay behind for the next launch check, and a failed release must not throw.
#include <catch2/catch.hpp>

#if SONATA_WITH_CUDA
#include "base/cuda_status.h"
#include "base/error.h"

using namespace sonata;

namespace {

// What cudaGetLastError would return next on this thread.
cudaError_t g_last_error = cudaSuccess;

cudaError_t take_fake_last_error() {
  const cudaError_t last = g_last_error;
  g_last_error = cudaSuccess;
  return last;
}

// A failing call leaves its status in the slot, as the runtime does.
cudaError_t fake_call(cudaError_t status) {
  if (status != cudaSuccess) g_last_error = status;
  return status;
}

}  // namespace

TEST_CASE("a query that is not ready leaves no error for the next launch check",
          "[core][cuda-status]") {
  g_last_error = cudaSuccess;
  CHECK_FALSE(query_finished(fake_call(cudaErrorNotReady), "cudaEventQuery(event)", __FILE__,
                             __LINE__, take_fake_last_error));
  // What CUDA_CHECK_LAUNCH would read after the next kernel.
  CHECK(take_fake_last_error() == cudaSuccess);
}

TEST_CASE("a finished query is true and touches nothing", "[core][cuda-status]") {
  g_last_error = cudaSuccess;
  CHECK(query_finished(fake_call(cudaSuccess), "cudaStreamQuery(stream)", __FILE__, __LINE__,
                       take_fake_last_error));
  CHECK(g_last_error == cudaSuccess);
}

TEST_CASE("a failed query is reported with its call", "[core][cuda-status]") {
  g_last_error = cudaSuccess;
  CHECK_THROWS_AS(query_finished(fake_call(cudaErrorIllegalAddress), "cudaEventQuery(done)",
                                 __FILE__, __LINE__, take_fake_last_error),
                  LibraryError);
  CHECK_THROWS_WITH(query_finished(fake_call(cudaErrorIllegalAddress), "cudaEventQuery(done)",
                                   __FILE__, __LINE__, take_fake_last_error),
                    Catch::Contains("cudaEventQuery(done)"));
}

TEST_CASE("a real error found under a NotReady is reported, not cleared away",
          "[core][cuda-status]") {
  g_last_error = cudaErrorLaunchFailure;  // left by something else, seen by this query
  CHECK_THROWS_AS(query_finished(cudaErrorNotReady, "cudaEventQuery(done)", __FILE__, __LINE__,
                                 take_fake_last_error),
                  LibraryError);
}

TEST_CASE("a failed release reports without throwing and clears its error", "[core][cuda-status]") {
  g_last_error = cudaSuccess;
  bool released = true;
  CHECK_NOTHROW(released = release_succeeded(fake_call(cudaErrorInvalidValue),
                                             "cudaFreeAsync(data, stream)", __FILE__, __LINE__,
                                             take_fake_last_error));
  CHECK_FALSE(released);
  CHECK(take_fake_last_error() == cudaSuccess);
  // At process exit, after the runtime has shut down: quietly nothing to do.
  CHECK_FALSE(release_succeeded(fake_call(cudaErrorCudartUnloading), "cudaStreamDestroy(s)",
                                __FILE__, __LINE__, take_fake_last_error));
  CHECK(take_fake_last_error() == cudaSuccess);
  CHECK(release_succeeded(cudaSuccess, "cudaEventDestroy(e)", __FILE__, __LINE__,
                          take_fake_last_error));
}
#endif  // SONATA_WITH_CUDA
