#pragma once
// Per-host-thread error state of the emulated runtime: the last error (cudaGetLastError
// returns and resets it, cudaPeekAtLastError only returns it) and the refusals that a card
// would not report but the emulator does (UsageError).
#include <stdexcept>
#include <string>

#include "driver_types.h"

namespace sonata::emu {

// A use of the runtime that a card accepts silently but that is a bug (a thread that never
// selected its device); the entry point reports it on stderr and returns an error.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Records `error` as the calling thread's last error unless it is cudaSuccess; returns it.
cudaError_t record_error(cudaError_t error);

// The calling thread's last error; `reset` clears it (cudaGetLastError).
cudaError_t last_error(bool reset);

// A name for the calling host thread in messages: its id and its pthread name.
std::string thread_label();

}  // namespace sonata::emu
