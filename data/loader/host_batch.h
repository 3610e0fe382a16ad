#pragma once
// A batch as the host prepares it: CPU tensors by name (each dataset's batch type names its
// fields, data/datasets/*_dataset.h), the number of items and the seconds of audio they hold
// (for throughput figures), and for ragged inputs how much of the batch is padding. A field
// marked `staged` is the step's device input: DeviceStager copies it to the device one batch
// ahead; the others stay on the host until the task moves them (lengths and targets that CTC
// and the decoders read on the CPU anyway).
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tensor.h"

namespace sonata {

struct BatchField {
  std::string name;
  Tensor tensor;
  bool staged = false;
};

struct HostBatch {
  std::vector<BatchField> fields;  // in the order added
  int64_t items = 0;
  double audio_seconds = 0;
  // Ragged inputs (speech): the time steps the items hold, and the time steps the batch
  // computes (items x the longest), so the share of padding can be reported. Both 0 for
  // fixed-size items.
  int64_t frames = 0, padded_frames = 0;
  // The items' files, when the dataset keeps them (speech): an error in the step, running out
  // of memory above all, names them (with_batch_named).
  std::vector<std::string> sources = {};  // (an initializer: aggregates may omit it)

  // Adds a field; a name already present is refused (a dataset bug, not bad input).
  void add(std::string name, Tensor tensor, bool staged = false);
  bool has(std::string_view name) const;
  // The field's tensor; a missing name throws, naming the fields the batch has.
  const Tensor& operator[](std::string_view name) const;
  Tensor& operator[](std::string_view name);
};

// Runs `step` on `batch`; running out of memory in it (std::bad_alloc, the allocators' "out
// of ... memory" errors) is rethrown naming the batch's files, since one overlong input is
// the usual cause: "out of CPU memory allocating N bytes in a batch of 4 clips: a.wav, ...".
void with_batch_named(const HostBatch& batch, const std::function<void()>& step);

}  // namespace sonata
