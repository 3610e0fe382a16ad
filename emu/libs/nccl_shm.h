#pragma once
// POSIX shared memory for the emulated NCCL: the communicator's control block (one per
// ncclUniqueId, named from it) and one short-lived segment per message or contribution.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace sonata::emu::nccl {

// A mapped shared-memory segment; unmapped (not unlinked) when destroyed.
class Segment {
 public:
  Segment() = default;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  Segment(Segment&& other) noexcept { *this = std::move(other); }
  Segment& operator=(Segment&& other) noexcept;
  ~Segment();

  // Creates (or opens, when it exists and `exclusive` is false) `name` with `bytes` bytes;
  // a new segment is zero-filled. Empty with `error` set on failure.
  static Segment create(const std::string& name, size_t bytes, bool exclusive, std::string* error);
  // Opens an existing segment (read-only unless `writable`); empty with `error` set on failure.
  static Segment open(const std::string& name, bool writable, std::string* error);
  static void unlink(const std::string& name);

  void* data() const { return data_; }
  size_t size() const { return size_; }
  explicit operator bool() const { return data_ != nullptr; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// The per-rank record in the control block. Texts are guarded by `text_lock`.
constexpr int kTextBytes = 224;
constexpr int kRing = 16;  // point-to-point messages in flight per ordered pair

struct OpDesc {
  int32_t kind = 0;  // OpKind
  int32_t dtype = 0;
  int32_t redop = 0;
  int32_t root = 0;  // root for broadcast/reduce; peer for send/recv
  uint64_t count = 0;
  uint64_t seq = 0;
};

struct RankSlot {
  std::atomic<uint32_t> joined;
  std::atomic<uint32_t> detached;
  std::atomic<uint64_t> op_posted;    // the last collective this rank has published
  std::atomic<uint64_t> op_done;      // ... and the last it has fetched every peer's data for
  OpDesc ops[kRing];                  // collective s at s % kRing (a rank runs < kRing ahead)
  std::atomic<uint64_t> host_posted;  // host-side collectives (ncclCommSplit)
  std::atomic<uint64_t> host_done;
  int32_t split_color;
  int32_t split_key;
  std::atomic<uint32_t> text_lock;
  char state[kTextBytes];         // what the rank is doing, for other ranks' error messages
  char device_state[kTextBytes];  // what holds the rank's device, when another communicator's
};

// The head of a published contribution or message; the data follows at kPayloadOffset. The
// last of its readers removes the segment.
struct SegmentHeader {
  std::atomic<int32_t> readers;
};
constexpr size_t kPayloadOffset = 64;

struct PairSlot {  // messages from one rank to another
  std::atomic<uint64_t> posted;
  std::atomic<uint64_t> consumed;
  OpDesc ring[kRing];
};

struct Header {
  std::atomic<uint32_t> nranks;  // set by the first rank to join
  std::atomic<int32_t> attached;
  std::atomic<int32_t> aborted_by;  // rank + 1 of a rank that called ncclCommAbort, or 0
};

size_t control_bytes(int nranks);
Header* header_of(void* control);
RankSlot* slot_of(void* control, int rank);
PairSlot* pair_of(void* control, int nranks, int from, int to);

// Writes/reads a rank's state text under its lock.
void set_text(RankSlot* slot, const std::string& text);
std::string get_text(RankSlot* slot);
void set_device_text(RankSlot* slot, const std::string& text);
std::string get_device_text(RankSlot* slot);

}  // namespace sonata::emu::nccl
