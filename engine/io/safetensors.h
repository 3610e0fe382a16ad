#pragma once
// safetensors (the format torch, HF and sonata checkpoints share), read and written by hand:
// an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and
// byte range, then the raw little-endian data. Every file is untrusted: a bad length, bad
// JSON, an unknown dtype, offsets out of range or overlapping, or a size that disagrees with
// shape and dtype is one clear sonata::Error naming the file and the tensor, never a crash
// or an over-read.
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

}  // namespace sonata
