// The Task API's compositions (train/task.h) give what the model computes by itself: a speech
// task's batch_loss is the benchmarks' speech_training_loss (forward_logits, then the fused
// log_softmax + CTC) bit for bit, and its evaluation counts the CTC loss of the model's
// forward() (log-probabilities) on each evaluation batch, also bit for bit, though the task's
// layers end at the logits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/ctc.h"
#include "engine/random.h"
#include "models/speech_training_loss.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/tasks/speech_task.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

TrainerOptions letters_options(const TemporaryFolder& folder) {
  const std::string path = folder.path().string();
  TrainerOptions options = tiny_ds2_options(write_letters_corpus(path, "train", 6, 1));
  options.val_manifest = write_letters_corpus(path, "val", 5, 2);
  return options;
}

}  // namespace

TEST_CASE("task api: a speech task's batch_loss is speech_training_loss, bit for bit",
          "[trainer][task]") {
  TemporaryFolder folder("task_api_loss");
  manual_seed(5);
  SpeechTask task(letters_options(folder), Vocabulary());
  const HostBatch batch = task.prepare({0, 1, 2}, 0);
  const double composed = batch_loss(task, batch, Device::cpu()).item();
  auto& model = dynamic_cast<SpeechModel&>(task.model());
  const double direct =
      speech_training_loss(model, batch[SpeechBatch::input], batch[SpeechBatch::input_lengths],
                           batch[SpeechBatch::targets], batch[SpeechBatch::target_lengths])
          .item();
  CHECK(std::isfinite(composed));
  CHECK(composed == direct);
}

TEST_CASE("task api: a speech task's evaluation counts the CTC of the model's log-probabilities",
          "[trainer][task]") {
  TemporaryFolder folder("task_api_eval");
  manual_seed(6);
  SpeechTask task(letters_options(folder), Vocabulary());
  const EvalCounts counts = evaluate(task, "val", Device::cpu(), 0, 1);

  // The same batches through the model's forward(), their per-clip losses over the target
  // lengths summed in the same order.
  const std::unique_ptr<EvalPass> pass = task.eval_pass("val", 0, 1);
  REQUIRE(pass->batch_count() > 0);
  NoGradGuard no_grad;
  auto& model = dynamic_cast<SpeechModel&>(task.model());
  model.eval();
  CtcOptions options = speech_ctc_options();
  options.reduction = Reduction::none;
  double loss_sum = 0;
  for (int64_t b = 0; b < pass->batch_count(); ++b) {
    const HostBatch batch = pass->batch(b);
    const SpeechOutput out =
        model.forward(batch[SpeechBatch::input], batch[SpeechBatch::input_lengths]);
    const Tensor target_lengths = batch[SpeechBatch::target_lengths];
    const std::vector<double> losses = ctc_loss(out.output, batch[SpeechBatch::targets],
                                                out.output_lengths, target_lengths, options)
                                           .to(DType::f64)
                                           .to_vector<double>();
    const std::vector<int64_t> lengths = target_lengths.to_vector<int64_t>();
    for (size_t n = 0; n < losses.size(); ++n)
      loss_sum += losses[n] / double(std::max<int64_t>(lengths[n], 1));
  }
  model.train();
  CHECK(counts.sums.at("clips") == 5);
  CHECK(std::isfinite(loss_sum));
  CHECK(counts.sums.at("loss_sum") == loss_sum);
}
