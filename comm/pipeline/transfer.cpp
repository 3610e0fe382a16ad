#include "comm/pipeline/transfer.h"

#include <chrono>

#include "base/error.h"

namespace sonata {
namespace {

constexpr int64_t kMaxDims = 8;

// [dtype, dims, number of lengths (-1: none), size 0, ..., size kMaxDims - 1]
constexpr int64_t kHeaderWords = 3 + kMaxDims;

}  // namespace

int pipe_tag(int micro_batch, PipeMessage kind) {
  SONATA_CHECK(micro_batch >= 0 && micro_batch <= kMaxMicroBatches, "pipeline: micro-batch ",
               micro_batch, " is past the ", kMaxMicroBatches,
               " whose message tags stay apart from the state exchanges'");
  return micro_batch * kPipeMessageKinds + int(kind);
}

void timed_wait(Work& work, double* waited_seconds) {
  const auto start = std::chrono::steady_clock::now();
  work.synchronize();
  if (waited_seconds)
    *waited_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<std::shared_ptr<Work>> send_value(ProcessGroup& group, const LayerValue& value,
                                              int peer, int micro_batch) {
  const Tensor x = value.x.detach().contiguous();
  SONATA_CHECK(x.dim() <= kMaxDims, "pipeline: an activation of ", x.dim(),
               " dimensions cannot be sent (at most ", kMaxDims, ")");
  std::vector<int64_t> words(size_t(kHeaderWords), 0);
  words[0] = int64_t(x.dtype());
  words[1] = x.dim();
  words[2] = value.lengths.defined() ? value.lengths.numel() : -1;
  for (int64_t d = 0; d < x.dim(); ++d) words[size_t(3 + d)] = x.size(d);
  const Device device = group.device();
  std::vector<std::shared_ptr<Work>> works;
  works.push_back(group.send(from_vector(words, {kHeaderWords}, device), peer,
                             pipe_tag(micro_batch, PipeMessage::header)));
  works.push_back(group.send(x, peer, pipe_tag(micro_batch, PipeMessage::activation)));
  if (value.lengths.defined()) {
    const Tensor lengths = value.lengths.to(DType::i64).contiguous().to(device);
    works.push_back(group.send(lengths, peer, pipe_tag(micro_batch, PipeMessage::lengths)));
  }
  return works;
}

LayerValue recv_value(ProcessGroup& group, int peer, int micro_batch, double* waited_seconds) {
  const Device device = group.device();
  Tensor header = empty({kHeaderWords}, TensorOptions{}.with(DType::i64).with(device));
  timed_wait(*group.recv(header, peer, pipe_tag(micro_batch, PipeMessage::header)), waited_seconds);
  const std::vector<int64_t> words = header.to_vector<int64_t>();
  SONATA_CHECK(words[1] >= 0 && words[1] <= kMaxDims && words[0] >= 0 &&
                   words[0] <= int64_t(DType::boolean) && words[2] >= -1,
               "pipeline: a malformed header arrived from stage rank ", peer);
  const Shape shape(words.begin() + 3, words.begin() + 3 + words[1]);
  LayerValue value;
  value.x = empty(shape, TensorOptions{}.with(DType(words[0])).with(device));
  auto activation = group.recv(value.x, peer, pipe_tag(micro_batch, PipeMessage::activation));
  if (words[2] >= 0) {
    Tensor lengths = empty({words[2]}, TensorOptions{}.with(DType::i64).with(device));
    timed_wait(*group.recv(lengths, peer, pipe_tag(micro_batch, PipeMessage::lengths)),
               waited_seconds);
    value.lengths = lengths.to(Device::cpu());
  }
  timed_wait(*activation, waited_seconds);
  return value;
}

}  // namespace sonata
