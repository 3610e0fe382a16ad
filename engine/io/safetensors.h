#pragma once
// safetensors (the format torch, HF and sonata checkpoints share), read and written by hand:
// an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and
// byte range, then the raw little-endian data. Every file is untrusted: a bad length, bad
// JSON, an unknown dtype, offsets out of range or overlapping, or a size that disagrees with
// shape and dtype is one clear sonata::Error naming the file and the tensor, never a crash
// or an over-read. Every file written carries a checksum of its bytes in its metadata
// (engine/io/safetensors_checksum.h), verified on every read; load_safetensors does not
// return it among the metadata.
#include <cstdint>
#include <map>
#include <string>

#include "engine/nn/module.h"
#include "engine/tensor.h"

namespace sonata {

using Metadata = std::map<std::string, std::string>;

struct SafetensorsContents {
  NamedTensors tensors;  // CPU tensors, in the order of their data in the file
  Metadata metadata;     // the "__metadata__" string map
};

// Writes atomically: a temporary file beside `path`, fsync, then rename, so a crash never
// leaves a truncated file under the final name. Tensors may live on any device.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata = {});
SafetensorsContents load_safetensors(const std::string& path);
// The parser behind load_safetensors, on bytes in memory; `source` names them in errors.
SafetensorsContents parse_safetensors(const uint8_t* data, size_t size, const std::string& source);

// Checking a file on disk without loading its tensors: `sizes` reads the header alone and
// checks that the file holds exactly the bytes it describes (cheap: finds truncated and
// overwritten files); `checksum` also streams every byte through the file's checksum, when
// it has one (engine/io/safetensors_checksum.h). Returns the metadata; throws naming the
// file otherwise.
enum class SafetensorsCheck { sizes, checksum };
Metadata check_safetensors_file(const std::string& path, SafetensorsCheck check);

}  // namespace sonata
