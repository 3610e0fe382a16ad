#pragma once
// The checksum sonata writes into every safetensors file it saves, so that damaged bytes are
// refused on load instead of loading silently. It is an ordinary string in the header's
// "__metadata__" (a str -> str map, so PyTorch's and HF's readers load the file unchanged):
//   "sonata.crc32c": eight lower-case hex digits, the CRC-32C (engine/io/crc32c.h) of the
//   whole file as written, with those eight digits read as the character '0'.
// So the header (the step, RNG offsets and options of a checkpoint live there) is covered
// as well as the data. A file without the key (older sonata, other writers) loads unchecked.
// Internal to engine/io/.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace sonata::safetensors_checksum {

inline constexpr char kKey[] = "sonata.crc32c";
inline constexpr size_t kDigits = 8;
// What the digits hold while the checksum is computed.
inline constexpr char kPlaceholder[] = "00000000";

// Where the checksum's digits start in `header` (the JSON text, `size` bytes), given that
// its parsed "__metadata__" holds kKey: the one place it is written as
// "sonata.crc32c":"<8 hex digits>". Throws naming `source` when there is no such one place.
size_t digits_offset(const char* header, size_t size, const std::string& source);

// The CRC-32C of a file fed in order, piece by piece, reading the eight bytes at file offset
// `digits_at` as '0'.
class FileChecksum {
 public:
  explicit FileChecksum(uint64_t digits_at) : digits_at_(digits_at) {}
  void update(const void* data, size_t size);
  uint32_t value() const { return crc_; }

 private:
  uint64_t digits_at_;
  uint64_t offset_ = 0;  // bytes fed so far
  uint32_t crc_ = 0;
};

// Eight lower-case hex digits.
std::string format_checksum(uint32_t crc);

// Throws, naming `source`, when `stored` (the digits as found in the file) is not
// `computed`: the file's bytes are not those that were written.
void check_checksum(const std::string& stored, uint32_t computed, const std::string& source);

}  // namespace sonata::safetensors_checksum
