// libFuzzer target for the safetensors reader (tools/fuzz.sh runs it). Files are untrusted:
// for any bytes the reader must either return tensors that lie inside the input and hold
// valid values, or throw sonata::Error. Any other exception escapes and terminates, which
// libFuzzer reports, as it does a crash, a sanitizer report, a hang or a blown memory limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "base/error.h"
#include "engine/io/safetensors.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const sonata::SafetensorsContents contents =
        sonata::parse_safetensors(data, size, "fuzz input");
    size_t total = 0;
    for (const auto& [name, tensor] : contents.tensors)
      total += sonata::fuzz::check_tensor(tensor, size);
    if (total > size) std::abort();  // tensors may not share bytes
  } catch (const sonata::Error&) {
    // The expected answer to a broken file.
  }
  return 0;
}
