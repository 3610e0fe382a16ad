// A destructor that calls something that can throw (NcclWork's calls current_stream(), which
// selects a device and may create a stream) must swallow the failure: an exception leaving a
// destructor is std::terminate, and this test would end the test run instead of failing.
#include <catch2/catch.hpp>

#include <functional>
#include <stdexcept>

#include "base/error.h"
#include "base/no_throw.h"

using namespace sonata;

namespace {

// NcclWork's shape: dropped unwaited, its destructor orders "the caller's stream" after the
// transfer, through an injected current_stream.
class UnwaitedWork {
 public:
  UnwaitedWork(std::function<int()> current_stream, bool& ordered)
      : current_stream_(std::move(current_stream)), ordered_(ordered) {}
  ~UnwaitedWork() {
    run_without_throwing("ordering the caller's stream after an unwaited operation", [&] {
      (void)current_stream_();
      ordered_ = true;
    });
  }

 private:
  std::function<int()> current_stream_;
  bool& ordered_;
};

}  // namespace

TEST_CASE("a destructor whose current_stream throws does not terminate", "[core][no_throw]") {
  bool ordered = false;
  {
    const UnwaitedWork work([]() -> int { throw Error("cudaSetDevice: no CUDA-capable device"); },
                            ordered);
  }
  CHECK_FALSE(ordered);
  {
    const UnwaitedWork work([] { return 7; }, ordered);
  }
  CHECK(ordered);
}

TEST_CASE("run_without_throwing reports whether the body finished", "[core][no_throw]") {
  CHECK(run_without_throwing("a body that returns", [] {}));
  CHECK_FALSE(run_without_throwing("a body that throws", [] { throw std::runtime_error("x"); }));
  CHECK_FALSE(run_without_throwing("a body that throws an int", [] { throw 3; }));
}
