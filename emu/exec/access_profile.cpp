#include "emu/exec/access_profile.h"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "emu/exec/shared_memory.h"
#include "emu/runtime/memory_map.h"

namespace sonata::emu::exec {

bool g_access_profile = false;

namespace {

constexpr uint32_t kWarp = 32;
constexpr unsigned kSectorShift = 5;  // 32-byte sectors
constexpr unsigned kBanks = 32;       // 4-byte banks
// A block that makes more lane accesses than this before it ends is summed in parts: the
// requests then split where a part ends (a bound on memory, not expected at test shapes).
constexpr size_t kMaxPendingAccesses = size_t(1) << 24;

enum class Space : uint8_t { global, shared };

struct RequestKey {
  const void* pc;
  uint32_t warp;
  uint32_t occurrence;
  bool operator==(const RequestKey&) const = default;
};
struct RequestKeyHash {
  size_t operator()(const RequestKey& k) const {
    return std::hash<const void*>()(k.pc) ^ (size_t(k.warp) * 0x9e3779b97f4a7c15ull) ^
           (size_t(k.occurrence) << 20);
  }
};

// One warp-level instruction: the byte ranges its lanes accessed.
struct Request {
  Space space = Space::global;
  bool write = false;
  bool atomic = false;
  std::vector<std::pair<uintptr_t, uint32_t>> ranges;
};

struct GridState {
  profile::KernelFigures totals;
  // Per thread of the block: how often it has reached each instruction.
  std::vector<std::vector<std::pair<const void*, uint32_t>>> occurrences;
  std::unordered_map<RequestKey, Request, RequestKeyHash> requests;
  size_t pending_accesses = 0;
};

thread_local GridState t_grid;

uint32_t next_occurrence(uint32_t thread, const void* pc) {
  auto& seen = t_grid.occurrences[thread];
  for (auto& [at, count] : seen)
    if (at == pc) return count++;
  seen.emplace_back(pc, 1);
  return 0;
}

// Bytes covered by the union of the ranges (sorted in place).
uint64_t union_bytes(std::vector<std::pair<uintptr_t, uint32_t>>& ranges) {
  std::sort(ranges.begin(), ranges.end());
  uint64_t bytes = 0;
  uintptr_t covered_to = 0;
  for (const auto& [begin, size] : ranges) {
    const uintptr_t end = begin + size;
    if (end <= covered_to) continue;
    bytes += end - std::max(begin, covered_to);
    covered_to = end;
  }
  return bytes;
}

// The distinct units (sectors or words) of `1 << shift` bytes the ranges touch.
std::vector<uintptr_t> units(const std::vector<std::pair<uintptr_t, uint32_t>>& ranges,
                             unsigned shift) {
  std::vector<uintptr_t> touched;
  for (const auto& [begin, size] : ranges)
    for (uintptr_t u = begin >> shift; u <= (begin + size - 1) >> shift; ++u) touched.push_back(u);
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  return touched;
}

void add_request(Request& request, profile::KernelFigures& f) {
  const uint64_t bytes = union_bytes(request.ranges);
  if (request.space == Space::shared) {
    // A bank serves one 4-byte word per wavefront; lanes reading one word share it.
    const std::vector<uintptr_t> words = units(request.ranges, 2);
    uint32_t per_bank[kBanks] = {};
    for (uintptr_t word : words) ++per_bank[word % kBanks];
    f.shared_requests += 1;
    f.shared_wavefronts += *std::max_element(per_bank, per_bank + kBanks);
    f.shared_ideal_wavefronts += (words.size() + kBanks - 1) / kBanks;
    return;
  }
  const uint64_t sectors = units(request.ranges, kSectorShift).size();
  const uint64_t ideal = (bytes + (1u << kSectorShift) - 1) >> kSectorShift;
  if (request.atomic) f.atomic_requests += 1;
  if (request.write) {
    f.store_requests += 1;
    f.store_bytes += bytes;
    f.store_sectors += sectors;
    f.store_ideal_sectors += ideal;
  } else {
    f.load_requests += 1;
    f.load_bytes += bytes;
    f.load_sectors += sectors;
    f.load_ideal_sectors += ideal;
  }
}

void flush_requests() {
  for (auto& [key, request] : t_grid.requests) add_request(request, t_grid.totals);
  t_grid.requests.clear();
  t_grid.pending_accesses = 0;
}

}  // namespace

void access_profile_begin_grid() {
  t_grid.totals = {};
  t_grid.requests.clear();
  t_grid.pending_accesses = 0;
}

void access_profile_begin_block(size_t threads_per_block) {
  t_grid.occurrences.assign(threads_per_block, {});
}

void access_profile_record(uint32_t thread, uintptr_t address, size_t bytes, bool write,
                           bool atomic, const void* pc) {
  Space space;
  if (is_shared_address(address)) {
    space = Space::shared;
  } else if (in_device_arena(reinterpret_cast<const void*>(address))) {
    space = Space::global;
    t_grid.totals.lane_accesses += 1;
    if (bytes < 4) t_grid.totals.narrow_lane_accesses += 1;
  } else {
    return;  // the thread's own stack: registers or local memory on a card
  }
  if (thread >= t_grid.occurrences.size()) return;
  const RequestKey key{pc, thread / kWarp, next_occurrence(thread, pc)};
  Request& request = t_grid.requests[key];
  request.space = space;
  request.write = write;
  request.atomic = atomic;
  request.ranges.emplace_back(address, uint32_t(bytes));
  if (++t_grid.pending_accesses >= kMaxPendingAccesses) flush_requests();
}

void access_profile_end_block() {
  flush_requests();
}

profile::KernelFigures access_profile_end_grid() {
  flush_requests();
  return t_grid.totals;
}

}  // namespace sonata::emu::exec
