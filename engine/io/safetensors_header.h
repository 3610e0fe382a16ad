#pragma once
// The JSON header of a safetensors file (engine/io/safetensors.h), apart from its data: read
// and checked once for the whole-file reader, the partial reader and the streamed writer,
// so that all three refuse and write the same. Internal to engine/io/.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/io/safetensors.h"
#include "engine/tensor_spec.h"

namespace sonata::safetensors_header {

// Header lengths past this are refused before anything is allocated for them.
inline constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct Entry {
  TensorSpec spec;
  uint64_t begin, end;  // the byte range in the data that follows the header
};

struct Parsed {
  std::vector<Entry> entries;  // by position in the data, none overlapping
  Metadata metadata;           // the "__metadata__" map, the checksum (if any) included
};

// The 8-byte little-endian header length at `bytes`.
uint64_t read_length(const uint8_t* bytes);

// The header's `size` bytes of JSON, followed by `payload_bytes` of data; throws naming
// `source` and the tensor for every way it is malformed (safetensors.h lists them).
Parsed parse(const char* text, size_t size, uint64_t payload_bytes, const std::string& source);

// The header text for `specs` in that order (data offsets back to back) and `metadata`,
// padded with spaces to a multiple of 8 bytes so that the data is aligned. Throws naming
// `path` for a tensor named __metadata__ or a name used twice.
std::string compose(const std::vector<TensorSpec>& specs, const Metadata& metadata,
                    const std::string& path);

}  // namespace sonata::safetensors_header
