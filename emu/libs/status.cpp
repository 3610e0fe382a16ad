// Shared helpers of the emulated libraries (see internal.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>

#include "emu/libs/internal.h"

namespace sonata::emu {

MemRange strided_range(const void* base, int64_t inner, int64_t outer, int64_t ld,
                       int64_t elem_bytes) {
  if (inner <= 0 || outer <= 0) return {base, 0};
  return {base, size_t(((outer - 1) * ld + inner) * elem_bytes)};
}

void add_strided(std::vector<MemRange>& ranges, const void* base, int64_t inner, int64_t outer,
                 int64_t ld, int64_t elem_bytes) {
  if (inner <= 0 || outer <= 0) return;
  if (ld == inner || outer == 1) {
    add_range(ranges, strided_range(base, inner, outer, ld, elem_bytes));
    return;
  }
  for (int64_t line = 0; line < outer; ++line)
    add_range(ranges, {static_cast<const char*>(base) + line * ld * elem_bytes,
                       size_t(inner * elem_bytes)});
}

void add_range(std::vector<MemRange>& ranges, MemRange range) {
  if (range.bytes == 0) return;
  if (!ranges.empty()) {
    MemRange& last = ranges.back();
    const auto* last_begin = static_cast<const char*>(last.data);
    const auto* begin = static_cast<const char*>(range.data);
    // Overlapping only, not merely touching: two tensors a caching allocator placed side by
    // side are two regions (sonata_emu_regions.h), and one range over both would run past
    // the first one's end.
    if (begin >= last_begin && begin < last_begin + last.bytes) {
      last.bytes = std::max(last.bytes, size_t(begin - last_begin) + range.bytes);
      return;
    }
  }
  ranges.push_back(range);
}

namespace {
thread_local std::string last_message;
}

int device_for(const char* call) {
  try {
    return current_device();
  } catch (const std::exception& refusal) {
    library_log(call, refusal.what());
    return -1;
  }
}

int stream_device_for(cudaStream_t stream, const char* call) {
  try {
    const int device = stream_device(stream);
    if (device < 0) library_log(call, "the stream is unknown or was destroyed");
    return device;
  } catch (const std::exception& refusal) {
    library_log(call, refusal.what());
    return -1;
  }
}

void library_log(const char* library, const std::string& message) {
  last_message = std::string(library) + ": " + message;
  std::fprintf(stderr, "[sonata emu] %s\n", last_message.c_str());
}

std::string last_library_message() {
  return last_message;
}

double env_positive(const char* name, double fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || value <= 0) {
    std::fprintf(stderr, "[sonata emu] %s=%s is not a positive number; using %g\n", name, text,
                 fallback);
    return fallback;
  }
  return value;
}

}  // namespace sonata::emu
