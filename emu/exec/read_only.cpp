// Not compiled with -fsanitize=thread (the hooks' own state).
#include "emu/exec/read_only.h"

#include <sstream>
#include <unordered_set>

#include "emu/exec/executor.h"
#include "emu/runtime/memory_map.h"

namespace sonata::emu::exec {

__thread bool t_read_only_used = false;

namespace {

// Per host thread, as the grid's fibers run on the host thread that launched it. Bytes are
// tracked at 4-byte granularity: loads and stores of kernel code are at least that
// aligned, and a finer grain would only make the sets larger.
struct ReadOnlyState {
  std::unordered_set<uintptr_t> loaded;
  std::unordered_set<uintptr_t> written;
};

ReadOnlyState& state() {
  thread_local ReadOnlyState s;
  return s;
}

constexpr int kGrainShift = 2;

[[noreturn]] void report(const char* what, uintptr_t address, size_t bytes, const void* pc) {
  {
    std::ostringstream check, detail;
    check << "ldgcheck: " << what << " of size " << bytes << " bytes";
    detail << "Address 0x" << std::hex << address << std::dec
           << " is loaded through the read-only data cache (__ldg) and written by the same "
              "kernel; __ldg is for data read-only for the whole kernel (pc "
           << pc << ")";
    report_fault(cudaErrorLaunchFailure, check.str(), detail.str());
  }
  stop_thread();
}

}  // namespace

void note_read_only_load(const void* address, size_t bytes, const void* pc) {
  if (!t_in_kernel || bytes == 0 || !in_device_arena(address)) return;
  t_read_only_used = true;
  ReadOnlyState& s = state();
  const auto a = reinterpret_cast<uintptr_t>(address);
  for (uintptr_t g = a >> kGrainShift; g <= (a + bytes - 1) >> kGrainShift; ++g) {
    if (s.written.count(g)) report("__ldg load of memory this kernel wrote", a, bytes, pc);
    s.loaded.insert(g);
  }
}

void note_write_after_read_only(uintptr_t address, size_t bytes, const void* pc) {
  if (bytes == 0) return;
  ReadOnlyState& s = state();
  for (uintptr_t g = address >> kGrainShift; g <= (address + bytes - 1) >> kGrainShift; ++g) {
    if (s.loaded.count(g))
      report("global write to memory this kernel loaded with __ldg", address, bytes, pc);
    s.written.insert(g);
  }
}

void reset_read_only() {
  t_read_only_used = false;
  ReadOnlyState& s = state();
  s.loaded.clear();
  s.written.clear();
}

}  // namespace sonata::emu::exec
