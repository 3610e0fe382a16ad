// The CUDA allocator's record-stream rule (engine/stream_uses.h) against a fake device: the
// free of memory used on other streams is ordered after each of them, on its own stream.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/stream_uses.h"

using namespace sonata;

namespace {

// Streams are only compared, never dereferenced: addresses of these stand in for them.
char home_stream, copy_stream, comm_stream;
StreamHandle home = &home_stream, copy = &copy_stream, comm = &comm_stream;
char block[16];

std::string name(StreamHandle stream) {
  return stream == home ? "home" : stream == copy ? "copy" : stream == comm ? "comm" : "?";
}

// Writes what the device would be asked to do, in order.
class RecordingOrdering final : public StreamOrdering {
 public:
  bool wait_for(StreamHandle waiter, StreamHandle used) override {
    calls.push_back(name(waiter) + " waits for " + name(used));
    return used != refuse;
  }
  void free_on(void* data, StreamHandle stream) override {
    calls.push_back((data == block ? std::string("free block on ") : "free ? on ") + name(stream));
  }
  std::vector<std::string> calls;
  StreamHandle refuse = nullptr;  // a stream whose wait fails
};

}  // namespace

TEST_CASE("memory used only on its own stream is freed there at once", "[core][allocator]") {
  StreamUses uses(home);
  uses.record(home);
  RecordingOrdering device;
  CHECK(uses.release(block, device));
  CHECK(device.calls == std::vector<std::string>{"free block on home"});
}

TEST_CASE("a free waits for every other stream that used the memory", "[core][allocator]") {
  StreamUses uses(home);
  uses.record(copy);
  uses.record(home);
  uses.record(comm);
  uses.record(copy);  // a repeat adds no second wait
  RecordingOrdering device;
  CHECK(uses.release(block, device));
  CHECK(device.calls == std::vector<std::string>{"home waits for copy", "home waits for comm",
                                                 "free block on home"});
}

TEST_CASE("memory whose wait cannot be arranged is leaked, not freed early", "[core][allocator]") {
  StreamUses uses(home);
  uses.record(copy);
  uses.record(comm);
  RecordingOrdering device;
  device.refuse = copy;
  CHECK_FALSE(uses.release(block, device));
  CHECK(device.calls == std::vector<std::string>{"home waits for copy"});
}
