// libFuzzer target for the .npy reader (tools/fuzz.sh runs it). Files are untrusted: for any
// bytes the reader must either return a tensor that lies inside the input and holds valid
// values, or throw sonata::Error. Any other exception escapes and terminates, which libFuzzer
// reports, as it does a crash, a sanitizer report, a hang or a blown memory limit.
#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "engine/io/npy.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sonata::fuzz::check_tensor(sonata::parse_npy(data, size, "fuzz input"), size);
  } catch (const sonata::Error&) {
    // The expected answer to a broken file.
  }
  return 0;
}
