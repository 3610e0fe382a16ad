#pragma once
// Two kinds of CUDA status that CUDA_CHECK cannot handle. A query's cudaErrorNotReady is an
// answer, not a failure; a release in a destructor or deleter may fail where nothing may
// throw. The runtime leaves both as the thread's last error, where the next
// CUDA_CHECK_LAUNCH (cudaGetLastError) would report them against an unrelated kernel and
// end the job: these helpers take them out again (PyTorch clears it after every query too).
#include <cuda_runtime_api.h>

namespace sonata {

// The runtime's cudaGetLastError (returns and clears the thread's last error); tests pass a
// fake to observe what is cleared.
using TakeLastError = cudaError_t (*)();

// The answer of cudaEventQuery / cudaStreamQuery: true once the work is done, false while it
// runs (cudaErrorNotReady, then cleared). Any other status is a failure, reported as
// CUDA_CHECK reports it, with `call`, `file` and `line` of the query.
bool query_finished(cudaError_t status, const char* call, const char* file, int line,
                    TakeLastError take_last_error = cudaGetLastError);

// For statuses of releases (cudaFreeAsync, cudaEventDestroy, cudaStreamDestroy...) in
// destructors and deleters. Returns true on success. On failure it writes one line to stderr
// naming the call and the place, clears the thread's last error and returns false, without
// throwing or calling the fatal handler: a destructor may run during unwinding, and a context
// that is really broken fails the next checked call, which reports it with its own place.
// cudaErrorCudartUnloading (static destructors after the runtime has shut down) is silent:
// the process is ending and takes the memory with it.
bool release_succeeded(cudaError_t status, const char* call, const char* file, int line,
                       TakeLastError take_last_error = cudaGetLastError);

}  // namespace sonata

// `if (CUDA_QUERY(cudaEventQuery(event))) ...`: true when done, false while running.
#define CUDA_QUERY(call) ::sonata::query_finished((call), #call, __FILE__, __LINE__)
// `CUDA_RELEASE(cudaEventDestroy(event));` in destructors: reports, never throws.
#define CUDA_RELEASE(call) ::sonata::release_succeeded((call), #call, __FILE__, __LINE__)
