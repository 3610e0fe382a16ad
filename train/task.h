#pragma once
// What the training loop needs from a model family: batches built on the host (on a worker
// thread, ahead of the step), a loss from a batch, an evaluation, and what a checkpoint must
// carry besides the weights. speech_task.h (CTC) and class_task.h (classification) fill it.
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

// evaluate() cut into its batches, so that a pipeline can run them through its stages: the
// batches of one shard of a split, in evaluate()'s order, each batch's input to the first
// layer, and the counts from the last layer's output (what pipeline_layers() run in order
// return, in eval mode without gradients). evaluate() is this pass over the whole model.
class EvalPass {
 public:
  virtual ~EvalPass() = default;
  virtual int64_t batch_count() const = 0;
  virtual HostBatch batch(int64_t index) const = 0;
  virtual LayerValue input(const HostBatch& batch, Device device) const = 0;
  virtual void add(const LayerValue& output, const HostBatch& batch) = 0;
  // The shard's counts: evaluate()'s when every batch was added.
  virtual EvalCounts finish() = 0;
};

// What loading the data found that a run must show: lines printed once when it starts, and
// counts for metrics.jsonl's "data" record ("train_skipped", "train_ctc_unreachable", ...).
struct DataReport {
  std::vector<std::string> lines;
  std::map<std::string, int64_t> counts;
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

  virtual Module& model() = 0;
  virtual std::shared_ptr<Module> shared_model() = 0;  // the same, for DDP to hold
  virtual int64_t train_items() const = 0;
  // Per-item lengths for length-bucketed batching (all equal for fixed-size items).
  virtual std::vector<int64_t> train_lengths() const = 0;
  // Per-item class labels, for class-balanced sampling (classification only).
  virtual std::vector<int64_t> train_labels() const { return {}; }
  // The sampling this task's items need: length buckets for ragged ones (padding costs),
  // uniform for fixed-size ones, class-balanced where asked for.
  virtual SamplingKind sampling() const { return SamplingKind::uniform; }
  // Thread-safe: called on a worker thread while the previous step computes. `epoch` keys the
  // augmentation, so a resumed run sees the same items.
  virtual HostBatch prepare(const std::vector<int64_t>& items, int64_t epoch) const = 0;
  // Forward pass and loss (a 0-dim f32 tensor, mean over the batch's items).
  virtual Tensor loss(const HostBatch& batch, Device device) = 0;
  // Evaluates this process's shard of `split` ("val" or "test": items (or tracks) rank,
  // rank + world, ...) in eval mode without gradients. Every rank returns the same sum names.
  // The default runs eval_pass()'s batches through every layer of pipeline_layers(), the
  // same pass a pipeline runs stage by stage.
  virtual EvalCounts evaluate(const std::string& split, Device device, int64_t rank, int64_t world);
  // The metrics and report of counts summed over every shard.
  virtual EvalResult summarize(const EvalCounts& totals) const = 0;
  virtual bool has_split(const std::string& split) const = 0;

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

  // Pipeline parallelism (--pipeline-stages): the model as its sequence of layers, a batch's
  // input to the first layer, the batch's tensors the loss needs (sent to the last stage, in
  // an order the task chooses), and the loss of the last layer's output from those targets:
  // together the same computation as loss(). The defaults throw: a task that cannot be cut
  // into stages says so.
  virtual LayerSequence pipeline_layers();
  virtual LayerValue pipeline_input(const HostBatch& batch, Device device);
  virtual std::vector<Tensor> pipeline_targets(const HostBatch& batch) const;
  virtual Tensor pipeline_loss(const LayerValue& output, const std::vector<Tensor>& targets,
                               Device device);
  // The evaluation of shard `rank` of `world` of `split` batch by batch (a pipelined
  // evaluation's). The default throws.
  virtual std::unique_ptr<EvalPass> eval_pass(const std::string& split, int64_t rank,
                                              int64_t world);
};

}  // namespace sonata
