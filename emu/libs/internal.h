#pragma once
// What the emulated libraries share: memory ranges of strided operands, the runtime hooks
// they need beyond emu/runtime/device_work.h, counters, and their error messages.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "emu/runtime/device_work.h"

namespace sonata::emu {

struct LibraryCounters {
  std::atomic<int64_t> cudnn_find{0};
  std::atomic<int64_t> cufft_device_syncs{0};
  std::atomic<int64_t> cufft_auto_allocations{0};
};
LibraryCounters& library_counters();

// The bytes a column-major (or any "ld-strided") operand touches: `outer` lines of `inner`
// elements, `ld` elements apart; nothing when either count is 0.
MemRange strided_range(const void* base, int64_t inner, int64_t outer, int64_t ld,
                       int64_t elem_bytes);
// Adds the bytes of such an operand to `ranges` exactly: one range when its lines are
// contiguous, else one per line, so the gaps between lines are neither checked for
// initialisation when read nor marked initialised when written.
void add_strided(std::vector<MemRange>& ranges, const void* base, int64_t inner, int64_t outer,
                 int64_t ld, int64_t elem_bytes);
// Adds `range` to `ranges`, merging it with the last one when they overlap (batched
// operands with overlapping matrices become one range; touching ones stay two, since they
// may be two tensors side by side in one caching-allocator segment).
void add_range(std::vector<MemRange>& ranges, MemRange range);

// A library's message on stderr, as the real libraries log failures (prefixed by the
// library's name); tests read the last one of the calling thread.
void library_log(const char* library, const std::string& message);
std::string last_library_message();

// current_device() and stream_device() for a library call: -1, with the reason logged as
// `call`'s, where the runtime refuses the thread (it never selected a device in a process
// that selected another than 0) or does not know the stream.
int device_for(const char* call);
int stream_device_for(cudaStream_t stream, const char* call);

// The environment variable `name` as a positive number (seconds, bytes), or `fallback` when
// unset or unreadable.
double env_positive(const char* name, double fallback);

}  // namespace sonata::emu
