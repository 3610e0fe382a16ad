#include "emu/exec/shared_memory.h"

#include <elf.h>
#include <link.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "emu/exec/executor.h"
#include "emu/include/device_launch_parameters.h"

namespace sonata::emu::exec {

namespace {

constexpr uint32_t kWarp = 32;

struct ByteShadow {
  uint32_t write_interval;  // barrier interval of the last plain write (0: none)
  uint32_t write_epoch;     // the writer's lane epoch then
  uint32_t read_interval;   // barrier interval of the reads recorded below
  uint32_t read_epoch;      // the latest lane epoch among those reads
  uint32_t init_block;      // block that last wrote the byte (any kind of write)
  uint32_t touched_block;   // block that last touched the byte (footprint)
  uint16_t writer, reader;  // linear thread indices
  uint16_t read_flags;      // kSeveralReaders at read_epoch, kSeveralWarps in the interval
  uint16_t pad;
};
constexpr uint16_t kSeveralReaders = 1, kSeveralWarps = 2;

struct Range {
  uintptr_t begin, end;
  ByteShadow* shadow;
};

std::vector<Range>* g_ranges = nullptr;
size_t g_block_footprint = 0;

bool is_system_object(const char* name) {
  return name && (std::strncmp(name, "/lib", 4) == 0 || std::strncmp(name, "/usr/lib", 8) == 0 ||
                  std::strstr(name, "linux-vdso") != nullptr);
}

int collect(dl_phdr_info* info, size_t, void* out) {
  auto* ranges = static_cast<std::vector<Range>*>(out);
  if (is_system_object(info->dlpi_name)) return 0;
  uintptr_t relro_begin = 0, relro_end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type == PT_GNU_RELRO) {
      relro_begin = info->dlpi_addr + p.p_vaddr;
      relro_end = relro_begin + p.p_memsz;
    }
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_LOAD || !(p.p_flags & PF_W)) continue;
    uintptr_t begin = info->dlpi_addr + p.p_vaddr, end = begin + p.p_memsz;
    if (relro_begin <= begin && begin < relro_end) begin = relro_end;
    if (begin >= end) continue;
    ranges->push_back(Range{begin, end, nullptr});
  }
  return 0;
}

std::vector<Range>& ranges() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto* found = new std::vector<Range>;
    dl_iterate_phdr(collect, found);
    for (Range& r : *found) {
      const size_t bytes = (r.end - r.begin) * sizeof(ByteShadow);
      void* shadow = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (shadow == MAP_FAILED) {
        std::fprintf(stderr, "sonata emu: cannot map the shared-memory shadow (%zu bytes)\n",
                     bytes);
        std::abort();
      }
      r.shadow = static_cast<ByteShadow*>(shadow);
    }
    g_ranges = found;
  });
  return *g_ranges;
}

const Range* find(uintptr_t address) {
  for (const Range& r : *g_ranges)
    if (address - r.begin < r.end - r.begin) return &r;
  return nullptr;
}

std::string access_text(SharedAccess kind, size_t bytes, uintptr_t address) {
  std::ostringstream out;
  out << (kind == SharedAccess::read    ? "Read"
          : kind == SharedAccess::write ? "Write"
                                        : "Atomic")
      << " of size " << bytes << " bytes at address 0x" << std::hex << address;
  return out.str();
}

__attribute__((noinline)) void report_race(const char* what, SharedAccess kind, size_t bytes,
                                           uintptr_t address, uintptr_t byte, unsigned other,
                                           const char* other_access, const void* pc) {
  const dim3 b = block_dim();
  std::ostringstream detail;
  detail << access_text(kind, bytes, address) << " (pc " << pc << ")\n"
         << "Race on byte 0x" << std::hex << byte << std::dec << " with a " << other_access
         << " by thread (" << other % b.x << ',' << other / b.x % b.y << ',' << other / (b.x * b.y)
         << ") in the same barrier interval, not ordered by a barrier"
         << " or a warp collective";
  report_fault(cudaErrorLaunchFailure, std::string("racecheck: ") + what, detail.str());
}

__attribute__((noinline)) void report_footprint(SharedAccess kind, size_t bytes,
                                                uintptr_t address) {
  std::ostringstream detail;
  detail << "The block touches more than " << kStaticSharedLimit
         << " bytes of __shared__ memory; a card refuses more than 48 KiB of static "
            "shared memory per block\n"
         << access_text(kind, bytes, address);
  report_fault(cudaErrorInvalidValue, "Too much static __shared__ memory", detail.str());
}

__attribute__((noinline)) void report_uninitialised(SharedAccess kind, size_t bytes,
                                                    uintptr_t address, uintptr_t byte,
                                                    const void* pc) {
  std::ostringstream detail;
  detail << access_text(kind, bytes, address) << " (pc " << pc << ")\n"
         << "Byte 0x" << std::hex << byte << std::dec
         << " was not written by this block (shared memory starts undefined)";
  report_fault(cudaErrorLaunchFailure, "initcheck: Uninitialized __shared__ memory read",
               detail.str());
}

}  // namespace

SharedHull g_shared_hull;

void init_shared_memory() {
  if (g_ranges) return;
  for (const Range& r : ranges()) {
    if (g_shared_hull.begin == g_shared_hull.end) {
      g_shared_hull = SharedHull{r.begin, r.end};
    } else {
      g_shared_hull.begin = std::min(g_shared_hull.begin, r.begin);
      g_shared_hull.end = std::max(g_shared_hull.end, r.end);
    }
  }
}

bool is_shared_address(uintptr_t address) {
  return maybe_shared(address) && g_ranges && find(address) != nullptr;
}

void begin_block_shared(size_t) {
  g_block_footprint = 0;
}

bool shared_access(uintptr_t address, size_t bytes, SharedAccess kind, const void* pc) {
  const Range* range = find(address);
  if (!range) return false;
  if (address + bytes > range->end) bytes = range->end - address;
  const ThreadClock clock = t_clock;
  const uint32_t warp = clock.thread / kWarp;
  ByteShadow* s = range->shadow + (address - range->begin);
  for (size_t i = 0; i < bytes; ++i, ++s) {
    if (s->touched_block != clock.block_serial) {
      s->touched_block = clock.block_serial;
      if (++g_block_footprint > kStaticSharedLimit) {
        report_footprint(kind, bytes, address);
        stop_thread();
      }
    }
    const bool write_ordered = s->writer / kWarp == warp && s->write_epoch < clock.lane_epoch;
    if (kind != SharedAccess::write) {
      if (s->init_block != clock.block_serial) {
        report_uninitialised(kind, bytes, address, address + i, pc);
        stop_thread();
      }
    }
    if (kind == SharedAccess::atomic) {
      s->init_block = clock.block_serial;
      continue;
    }
    if (s->write_interval == clock.interval && s->writer != clock.thread && !write_ordered) {
      report_race(
          kind == SharedAccess::read ? "Read-after-write hazard" : "Write-after-write hazard", kind,
          bytes, address, address + i, s->writer, "write", pc);
      stop_thread();
    }
    if (kind == SharedAccess::read) {
      if (s->read_interval != clock.interval) {
        s->read_interval = clock.interval;
        s->reader = uint16_t(clock.thread);
        s->read_epoch = clock.lane_epoch;
        s->read_flags = 0;
      } else if (s->reader != clock.thread) {
        if (s->reader / kWarp != warp) {
          s->read_flags |= kSeveralWarps;
        } else if (clock.lane_epoch > s->read_epoch) {
          s->read_epoch = clock.lane_epoch;
          s->reader = uint16_t(clock.thread);
          s->read_flags &= ~kSeveralReaders;
        } else {
          s->read_flags |= kSeveralReaders;
        }
      }
      continue;
    }
    // A plain write: every read of this interval must be by this thread or ordered before.
    if (s->read_interval == clock.interval) {
      bool hazard;
      if (s->read_flags & kSeveralWarps)
        hazard = true;
      else if (s->reader / kWarp != warp)
        hazard = true;
      else if (s->read_epoch < clock.lane_epoch)
        hazard = false;
      else
        hazard = s->reader != clock.thread || (s->read_flags & kSeveralReaders);
      if (hazard) {
        report_race("Write-after-read hazard", kind, bytes, address, address + i, s->reader, "read",
                    pc);
        stop_thread();
      }
    }
    s->write_interval = clock.interval;
    s->write_epoch = clock.lane_epoch;
    s->writer = uint16_t(clock.thread);
    s->init_block = clock.block_serial;
  }
  return true;
}

}  // namespace sonata::emu::exec
