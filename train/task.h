#pragma once
// What the training loop needs from a model family: batches built on the host (on a worker
// thread, ahead of the step), the model as its sequence of layers, a batch's input to the
// first layer, the batch's targets, the loss of the last layer's output, an evaluation batch
// by batch, and what a checkpoint must carry besides the weights. speech_task.h (CTC) and
// class_task.h (classification) fill it.
//
// One process and a pipeline compute alike from these pieces: one process runs every layer
// (batch_loss and evaluate below), a pipeline runs a range of them on each stage
// (train/pipeline/pipeline_parallel.h), the first stage feeding input(), the last one
// computing loss() or adding the output to the EvalPass.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/loader/batch_loader.h"
#include "engine/nn/layer_sequence.h"
#include "engine/nn/module.h"
#include "engine/tensor.h"

namespace sonata {

// What one process's share of an evaluation adds up: named sums (edit counts, correct
// predictions, loss sums, confusion cells) that the trainer sums over the ranks, plus
// decoded examples (rank 0's are shown).
struct EvalCounts {
  std::map<std::string, double> sums;
  std::vector<std::string> examples;
};

// An evaluation of one shard of a split, batch by batch: its batches in order, and the counts
// from each batch's last-layer output (Task::layers() run on Task::input() of the batch, in
// eval mode without gradients, whether in one process or through a pipeline's stages).
class EvalPass {
 public:
  virtual ~EvalPass() = default;
  virtual int64_t batch_count() const = 0;
  virtual HostBatch batch(int64_t index) const = 0;
  // Batches are added in order, each once.
  virtual void add(const LayerValue& output, const HostBatch& batch) = 0;
  // The shard's counts, once every batch was added.
  virtual EvalCounts finish() = 0;
};

// What loading the data found that a run must show: lines said once when it starts (notices:
// --progress none does not hide them), and counts for metrics.jsonl's "data" record
// ("train_skipped", "train_ctc_unreachable", ...), with the first inputs of a count named
// ("train_skipped_first": their reasons, each naming the input).
struct DataReport {
  std::vector<std::string> lines;
  std::map<std::string, int64_t> counts;
  std::map<std::string, std::vector<std::string>> named;
};

struct EvalResult {
  std::map<std::string, double> metrics;  // "cer", "wer", "accuracy", "loss", ...
  std::vector<std::string> report;        // lines for the terminal (transcripts, confusion)
};

// How the training items are drawn into batches (make_sampler, sampler_choice.h).
enum class SamplingKind {
  uniform,         // a fresh permutation each epoch
  class_balanced,  // classes equally often (train_labels())
  length_buckets,  // items of similar train_lengths() together: little padding
};

struct TrainerOptions;
// Whether a task builds its model deferred (engine/deferred_init.h): under a pipeline each
// stage then materialises its own layers alone, and no rank allocates another stage's.
// Not for --eval-only, which evaluates the whole model in one process.
bool builds_model_deferred(const TrainerOptions& options);

class Task {
 public:
  virtual ~Task() = default;

  // The model, whole (its state_dict is the checkpoint's), and as its layers: running them
  // all in order on input() gives the output loss() and EvalPass::add() take. They refer to
  // the model: keep the task alive while they are in use.
  virtual Module& model() = 0;
  virtual std::shared_ptr<Module> shared_model() = 0;  // the same, for DDP to hold
  virtual const LayerSequence& layers() const = 0;

  // The training items.
  virtual int64_t train_items() const = 0;
  // Per-item lengths for length-bucketed batching (all equal for fixed-size items).
  virtual std::vector<int64_t> train_lengths() const = 0;
  // Per-item class labels, for class-balanced sampling (none: the task does not classify).
  virtual std::vector<int64_t> train_labels() const { return {}; }
  // The sampling this task's items need: length buckets for ragged ones (padding costs),
  // uniform for fixed-size ones, class-balanced where asked for.
  virtual SamplingKind sampling() const { return SamplingKind::uniform; }
  // Thread-safe: called on a worker thread while the previous step computes. `epoch` keys the
  // augmentation, so a resumed run sees the same items.
  virtual HostBatch prepare(const std::vector<int64_t>& items, int64_t epoch) const = 0;

  // One batch's computation. input(): the first layer's input on `device` (of a training
  // batch from prepare() or an evaluation batch from an EvalPass; device-side featurising
  // and augmentation happen here). targets(): the batch's tensors the loss needs, on the host
  // (a pipeline hands them to its last stage), in an order the task chooses. loss(): of the
  // last layer's output and those targets, a 0-dim f32 tensor, mean over the batch's items.
  virtual LayerValue input(const HostBatch& batch, Device device) = 0;
  virtual std::vector<Tensor> targets(const HostBatch& batch) const = 0;
  virtual Tensor loss(const LayerValue& output, const std::vector<Tensor>& targets,
                      Device device) = 0;

  // Evaluation. has_split(): whether `split` ("val" or "test") has items. eval_pass(): the
  // evaluation of this process's shard of it (items (or tracks) rank, rank + world, ...);
  // every shard's counts have the same sum names. summarize(): the metrics and report of
  // counts summed over every shard.
  virtual bool has_split(const std::string& split) const = 0;
  virtual std::unique_ptr<EvalPass> eval_pass(const std::string& split, int64_t rank,
                                              int64_t world) = 0;
  virtual EvalResult summarize(const EvalCounts& totals) const = 0;
  // The metric that picks the best checkpoint, and whether lower is better.
  virtual std::string best_metric() const = 0;
  virtual bool lower_is_better() const = 0;

  // What must match for a checkpoint to be resumed or evaluated ("vocabulary", "label_map").
  virtual std::map<std::string, std::string> checkpoint_texts() const = 0;
  // Texts saved beside those for the tools that read a checkpoint (classify: "inputs"), never
  // compared on resume, so that checkpoints written before one existed still resume.
  virtual std::map<std::string, std::string> checkpoint_notes() const { return {}; }
  // One line on the data ("2400 clips, 1.2 h, 29 symbols"), printed at start.
  virtual std::string describe() const = 0;
  // The unit of throughput: "utt" or "img".
  virtual const char* item_name() const = 0;
  // Inputs skipped under --bad-input skip and other findings of the loading (none here).
  virtual DataReport data_report() const { return {}; }
};

// One process's loss of a batch: every layer of task.layers() on task.input(batch), then
// task.loss() of the output and task.targets(batch).
Tensor batch_loss(Task& task, const HostBatch& batch, Device device);

// One process's evaluation of shard `rank` of `world` of `split`: every batch of
// task.eval_pass() through every layer, in eval mode without gradients. A model built
// deferred is made whole first.
EvalCounts evaluate(Task& task, const std::string& split, Device device, int64_t rank,
                    int64_t world);

}  // namespace sonata
