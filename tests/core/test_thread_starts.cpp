// Every thread the project starts that can touch CUDA must select its device first, or its
// first CUDA call opens a context on GPU 0 (engine/device_thread.h). This test reads the
// sources: a file that starts a thread other than through start_device_thread fails it, so
// a new thread cannot miss its device unnoticed. A file that starts a thread which never
// touches CUDA goes in the list below, with the reason.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// Files allowed to start threads directly, and why.
const std::map<std::string, std::string> kAllowed = {
    {"engine/device_thread.h", "start_device_thread's declaration"},
    {"engine/device_thread.cpp", "start_device_thread itself"},
    {"comm/heartbeat_monitor.cpp", "the heartbeat monitor makes no CUDA call, by design"},
    {"base/parallel_for.cpp",
     "its callers (decoding clips, the feature cache's CPU log-mel) work on the CPU"},
};

// A thread started: std::thread / std::jthread constructed, std::async, pthread_create, or a
// thread vector's emplace_back.
const std::regex kStartsThread(
    R"(std::j?thread\s*[({]|std::j?thread\s+\w+\s*[({]|std::async\s*\(|pthread_create\s*\(|threads_?\.emplace_back\()");

}  // namespace

TEST_CASE("every thread the project starts selects its device first", "[core][device]") {
  const fs::path root = fs::path(SONATA_FIXTURES_DIR).parent_path().parent_path();
  std::vector<std::string> offenders;
  int files = 0;
  for (const char* folder :
       {"base", "bench", "comm", "data", "engine", "kernels", "models", "tools"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() ||
          (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh"))
        continue;
      ++files;
      const std::string relative = fs::relative(entry.path(), root).generic_string();
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      if (std::regex_search(text.str(), kStartsThread) && !kAllowed.count(relative))
        offenders.push_back(relative);
    }
  }
  CHECK(files > 100);  // the sources were found
  INFO(
      "start threads that can touch CUDA with start_device_thread (engine/device_thread.h); "
      "a thread that never touches CUDA goes in kAllowed with the reason");
  CHECK(offenders == std::vector<std::string>{});
}
