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
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/nn/module.h"
#include "engine/tensor.h"
#include "engine/tensor_spec.h"

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

// Tensors to be written one at a time: what each is, known before any data, and fetch(i)
// handing over tensor i (any device) when its bytes are due. The writer asks for each
// once, in order, and drops it before asking for the next, so that it holds one at a time
// (a writer receiving them from the processes that hold them holds one in flight).
struct TensorSource {
  std::vector<TensorSpec> specs;
  std::function<Tensor(size_t index)> fetch;
};
// `tensors` as a source, fetching from it (which must outlive the source).
TensorSource tensor_source(const NamedTensors& tensors);
// save_safetensors of the source's tensors, streamed: the header from the specs first, each
// tensor's bytes appended as it is fetched, the checksum computed on the way and written
// into the header last. The file is byte for byte the one save_safetensors writes for the
// same tensors. A fetched tensor whose dtype or shape differs from its spec is an error
// naming the file and the tensor (and no file is left behind).
void save_safetensors_streamed(const std::string& path, const TensorSource& source,
                               const Metadata& metadata = {});

// A file's header read and checked as load_safetensors checks it, without its data (nor
// its checksum): what tensors it holds, in the order of their data, and its metadata.
struct SafetensorsHeader {
  std::vector<TensorSpec> tensors;
  Metadata metadata;  // without the checksum
};
SafetensorsHeader read_safetensors_header(const std::string& path);
// The tensors of `path` named in `names` (each must be in the file: one that is not is an
// error naming it), in the order of their data, and the metadata. Every byte of the file is
// streamed through its checksum on the way (when it has one) and only the named tensors are
// kept, so that reading part of a file costs memory for that part alone and still refuses a
// damaged file, as load_safetensors does.
// `rows` keeps only rows [first, second) along dim 0 of the tensors it names (a piece of a
// layer cut by rows across pipeline stages); a range outside a tensor's dim 0 is an error.
using SafetensorsRows = std::map<std::string, std::pair<int64_t, int64_t>>;
SafetensorsContents load_safetensors_tensors(const std::string& path,
                                             const std::vector<std::string>& names,
                                             const SafetensorsRows& rows = {});

// Checking a file on disk without loading its tensors: `sizes` reads the header alone and
// checks that the file holds exactly the bytes it describes (cheap: finds truncated and
// overwritten files); `checksum` also streams every byte through the file's checksum, when
// it has one (engine/io/safetensors_checksum.h). Returns the metadata; throws naming the
// file otherwise.
enum class SafetensorsCheck { sizes, checksum };
Metadata check_safetensors_file(const std::string& path, SafetensorsCheck check);

// The checksum digits a file's header carries (engine/io/safetensors_checksum.h), "" when it
// carries none; the header alone is read, nothing is verified. A checkpoint reader asks it to
// refuse a file of its own whose checksum was removed or renamed rather than load it unchecked.
std::string stored_safetensors_checksum(const std::string& path);

}  // namespace sonata
