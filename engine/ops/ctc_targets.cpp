#include "engine/ops/ctc_targets.h"

#include <algorithm>

#include "base/error.h"

namespace sonata {
namespace {

bool is_index_dtype(DType dtype) {
  return dtype == DType::i64 || dtype == DType::i32;
}

std::vector<int64_t> read_lengths(const char* op, const char* name, const Tensor& lengths,
                                  int64_t batch) {
  SONATA_CHECK(lengths.defined(), op, ": ", name, " is undefined");
  SONATA_CHECK(is_index_dtype(lengths.dtype()), op, ": ", name,
               " must be an i64 or i32 tensor, got ", dtype_name(lengths.dtype()));
  SONATA_CHECK(lengths.dim() == 1 && lengths.size(0) == batch, op, ": ", name, " must have shape [",
               batch, "] (one length per sample of log_probs), got ", shape_str(lengths.shape()));
  std::vector<int64_t> values = lengths.to_vector<int64_t>();
  for (int64_t n = 0; n < batch; ++n)
    SONATA_CHECK(values[size_t(n)] >= 0, op, ": ", name, "[", n, "] = ", values[size_t(n)],
                 " is negative");
  return values;
}

// Each sample's labels, checked, concatenated; offsets[n] is where sample n's start.
void read_labels(const char* op, const Tensor& targets, const std::vector<int64_t>& lengths,
                 int64_t classes, int64_t blank, std::vector<int64_t>& labels,
                 std::vector<int64_t>& offsets) {
  const int64_t batch = int64_t(lengths.size());
  SONATA_CHECK(targets.defined(), op, ": targets is undefined");
  SONATA_CHECK(is_index_dtype(targets.dtype()), op, ": targets must be an i64 or i32 tensor, got ",
               dtype_name(targets.dtype()));
  int64_t total = 0;
  for (int64_t length : lengths) total += length;
  int64_t row_width = 0;  // padded targets: labels of sample n start at n * row_width
  if (targets.dim() == 2) {
    SONATA_CHECK(targets.size(0) == batch, op, ": padded targets must have ", batch,
                 " rows (one per sample of log_probs), got shape ", shape_str(targets.shape()));
    row_width = targets.size(1);
    for (int64_t n = 0; n < batch; ++n)
      SONATA_CHECK(lengths[size_t(n)] <= row_width, op, ": target_lengths[", n,
                   "] = ", lengths[size_t(n)], " exceeds the padded targets' width ", row_width);
  } else {
    SONATA_CHECK(targets.dim() == 1, op,
                 ": targets must be padded [N, S] or concatenated [sum of target_lengths], got "
                 "shape ",
                 shape_str(targets.shape()));
    SONATA_CHECK(targets.size(0) == total, op, ": concatenated targets hold ", targets.size(0),
                 " labels but target_lengths sum to ", total);
  }
  const std::vector<int64_t> values = targets.to_vector<int64_t>();
  labels.clear();
  labels.reserve(size_t(total));
  offsets.assign(size_t(batch), 0);
  int64_t next = 0;  // concatenated: where sample n starts in `values`
  for (int64_t n = 0; n < batch; ++n) {
    offsets[size_t(n)] = int64_t(labels.size());
    const int64_t start = targets.dim() == 2 ? n * row_width : next;
    for (int64_t j = 0; j < lengths[size_t(n)]; ++j) {
      const int64_t label = values[size_t(start + j)];
      SONATA_CHECK(label >= 0 && label < classes, op, ": targets of sample ", n, " hold label ",
                   label, " at position ", j, ", outside the ", classes, " classes of log_probs");
      SONATA_CHECK(label != blank, op, ": targets of sample ", n, " hold the blank label ", blank,
                   " at position ", j);
      labels.push_back(label);
    }
    next += lengths[size_t(n)];
  }
}

}  // namespace

kernels::CtcTargets CtcBatch::view() const {
  const int64_t* base = buffer.numel() > 0 ? buffer.data<int64_t>() : nullptr;
  kernels::CtcTargets targets;
  if (!base) return targets;
  targets.labels = base;
  targets.label_offsets = targets.labels + label_count;
  targets.target_lengths = targets.label_offsets + batch;
  targets.input_lengths = targets.target_lengths + batch;
  targets.class_positions = targets.input_lengths + batch;
  targets.class_starts = targets.class_positions + label_count;
  return targets;
}

CtcBatch pack_ctc_batch(const char* op, const Shape& shape, const Tensor& targets,
                        const Tensor& input_lengths, const Tensor& target_lengths, int64_t blank,
                        Device device) {
  const int64_t frames = shape[0], batch = shape[1], classes = shape[2];
  CtcBatch packed;
  packed.batch = batch;
  packed.classes = classes;
  const std::vector<int64_t> frame_counts = read_lengths(op, "input_lengths", input_lengths, batch);
  for (int64_t n = 0; n < batch; ++n)
    SONATA_CHECK(frame_counts[size_t(n)] <= frames, op, ": input_lengths[", n,
                 "] = ", frame_counts[size_t(n)], " exceeds the ", frames, " frames of log_probs");
  packed.target_lengths = read_lengths(op, "target_lengths", target_lengths, batch);
  std::vector<int64_t> labels, offsets;
  read_labels(op, targets, packed.target_lengths, classes, blank, labels, offsets);
  packed.label_count = int64_t(labels.size());
  for (int64_t length : packed.target_lengths)
    packed.max_target_length = std::max(packed.max_target_length, length);

  std::vector<int64_t> all;
  all.reserve(size_t(2 * packed.label_count + 3 * batch + batch * (classes + 1)));
  all.insert(all.end(), labels.begin(), labels.end());
  all.insert(all.end(), offsets.begin(), offsets.end());
  all.insert(all.end(), packed.target_lengths.begin(), packed.target_lengths.end());
  all.insert(all.end(), frame_counts.begin(), frame_counts.end());
  // The label -> positions index, by a counting sort per sample (stable, so positions of a
  // class come in order).
  std::vector<int64_t> starts(size_t(batch * (classes + 1)), 0);
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t* sample = labels.data() + offsets[size_t(n)];
    const int64_t length = packed.target_lengths[size_t(n)];
    int64_t* bounds = starts.data() + n * (classes + 1);
    for (int64_t j = 0; j < length; ++j) ++bounds[sample[j] + 1];
    for (int64_t c = 0; c < classes; ++c) bounds[c + 1] += bounds[c];
    std::vector<int64_t> fill(bounds, bounds + classes);
    std::vector<int64_t> positions(static_cast<size_t>(length));
    for (int64_t j = 0; j < length; ++j) positions[size_t(fill[size_t(sample[j])]++)] = j;
    all.insert(all.end(), positions.begin(), positions.end());
  }
  all.insert(all.end(), starts.begin(), starts.end());
  packed.buffer = from_vector(all, {int64_t(all.size())}, device);
  return packed;
}

}  // namespace sonata
