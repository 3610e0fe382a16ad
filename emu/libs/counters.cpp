#include "emu/libs/counters.h"

#include "emu/libs/internal.h"

namespace sonata::emu {

LibraryCounters& library_counters() {
  static LibraryCounters counters;
  return counters;
}

int64_t cudnn_find_calls() {
  return library_counters().cudnn_find.load();
}
int64_t cufft_device_syncs() {
  return library_counters().cufft_device_syncs.load();
}
int64_t cufft_auto_allocations() {
  return library_counters().cufft_auto_allocations.load();
}
void reset_library_counters() {
  library_counters().cudnn_find = 0;
  library_counters().cufft_device_syncs = 0;
  library_counters().cufft_auto_allocations = 0;
}

}  // namespace sonata::emu
