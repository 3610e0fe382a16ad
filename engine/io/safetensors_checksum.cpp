#include "engine/io/safetensors_checksum.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "engine/io/crc32c.h"

namespace sonata::safetensors_checksum {
namespace {

bool is_lower_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

}  // namespace

size_t digits_offset(const char* header, size_t size, const std::string& source) {
  // Inside a JSON string every '"' is escaped, so this text (quotes unescaped) can only be a
  // key followed by its string value; written compactly, as sonata writes it.
  const std::string pattern = std::string("\"") + kKey + "\":\"";
  const char* end = header + size;
  const char* found = std::search(header, end, pattern.begin(), pattern.end());
  const char* again =
      found == end ? end : std::search(found + 1, end, pattern.begin(), pattern.end());
  const size_t at = size_t(found - header) + pattern.size();
  const bool one_place = found != end && again == end && at + kDigits < size &&
                         std::all_of(header + at, header + at + kDigits, is_lower_hex) &&
                         header[at + kDigits] == '"';
  if (!one_place)
    throw Error(str(source, ": the metadata '", kKey,
                    "' is not written as sonata writes it (once, as \"", kKey,
                    "\":\"<8 hex digits>\"): the header was damaged or rewritten"));
  return at;
}

void FileChecksum::update(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  const uint64_t begin = offset_, end = offset_ + size;
  const uint64_t digits_end = digits_at_ + kDigits;
  if (end <= digits_at_ || begin >= digits_end) {
    crc_ = crc32c_extend(crc_, p, size);
  } else {
    // The piece overlaps the digits: before them, the placeholder's share, after them.
    const uint64_t cut_begin = std::max(begin, digits_at_), cut_end = std::min(end, digits_end);
    crc_ = crc32c_extend(crc_, p, size_t(cut_begin - begin));
    crc_ = crc32c_extend(crc_, kPlaceholder, size_t(cut_end - cut_begin));
    crc_ = crc32c_extend(crc_, p + (cut_end - begin), size_t(end - cut_end));
  }
  offset_ = end;
}

std::string format_checksum(uint32_t crc) {
  char digits[kDigits + 1];
  std::snprintf(digits, sizeof digits, "%08x", crc);
  return digits;
}

void check_checksum(const std::string& stored, uint32_t computed, const std::string& source) {
  if (stored == format_checksum(computed)) return;
  throw Error(str(source, ": the bytes do not match the file's checksum (", kKey, " ", stored,
                  ", the bytes give ", format_checksum(computed),
                  "): damaged on disk or in transit (a tool that rewrote the file but kept "
                  "sonata's metadata also leaves a stale checksum; drop the key to load it)"));
}

}  // namespace sonata::safetensors_checksum
