#pragma once
// A batch as the host prepares it: CPU tensors by name (each dataset's batch type names its
// fields, data/datasets/*_dataset.h), the number of items and the seconds of audio they hold
// (for throughput figures), and for ragged inputs how much of the batch is padding. A field
// marked `staged` is the step's device input: DeviceStager copies it to the device one batch
// ahead; the others stay on the host until the task moves them (lengths and targets that CTC
// and the decoders read on the CPU anyway).
#include <cstdint>
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

  // Adds a field; a name already present is refused (a dataset bug, not bad input).
  void add(std::string name, Tensor tensor, bool staged = false);
  bool has(std::string_view name) const;
  // The field's tensor; a missing name throws, naming the fields the batch has.
  const Tensor& operator[](std::string_view name) const;
  Tensor& operator[](std::string_view name);
};

}  // namespace sonata
