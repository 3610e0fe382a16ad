#include "comm/pipeline/micro_batch.h"

#include "base/error.h"

namespace sonata {
namespace {

std::vector<Tensor> split_rows(const Tensor& tensor, const std::vector<int64_t>& sizes,
                               const char* what) {
  int64_t rows = 0;
  for (int64_t size : sizes) rows += size;
  SONATA_CHECK(tensor.dim() >= 1 && tensor.size(0) == rows, "pipeline: the ", what, " (shape ",
               shape_str(tensor.shape()), ") must have the batch's ", rows, " rows");
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t size : sizes) {
    parts.push_back(tensor.slice(0, start, start + size));
    start += size;
  }
  return parts;
}

}  // namespace

std::vector<int64_t> micro_batch_sizes(int64_t batch, int micro_batches) {
  SONATA_CHECK(micro_batches >= 1 && batch >= micro_batches, "pipeline: a batch of ", batch,
               " cannot be cut into ", micro_batches, " micro-batches of at least one sample");
  std::vector<int64_t> sizes(size_t(micro_batches), batch / micro_batches);
  for (int64_t m = 0; m < batch % micro_batches; ++m) ++sizes[size_t(m)];
  return sizes;
}

std::vector<LayerValue> split_micro_batches(const LayerValue& value, int micro_batches) {
  SONATA_CHECK(value.x.defined() && value.x.dim() >= 1,
               "pipeline: the batch must be a tensor with a batch dimension");
  const std::vector<int64_t> sizes = micro_batch_sizes(value.x.size(0), micro_batches);
  const std::vector<Tensor> xs = split_rows(value.x, sizes, "input");
  std::vector<Tensor> lengths;
  if (value.lengths.defined()) lengths = split_rows(value.lengths, sizes, "input lengths");
  std::vector<LayerValue> parts;
  for (size_t m = 0; m < xs.size(); ++m)
    parts.push_back({xs[m], lengths.empty() ? Tensor() : lengths[m]});
  return parts;
}

std::vector<std::vector<Tensor>> split_targets(const std::vector<Tensor>& targets, int64_t batch,
                                               int micro_batches) {
  const std::vector<int64_t> sizes = micro_batch_sizes(batch, micro_batches);
  std::vector<std::vector<Tensor>> parts(sizes.size());
  for (const Tensor& target : targets) {
    const std::vector<Tensor> rows = split_rows(target, sizes, "targets");
    for (size_t m = 0; m < rows.size(); ++m) parts[m].push_back(rows[m]);
  }
  return parts;
}

}  // namespace sonata
