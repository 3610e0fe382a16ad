// peer_torch.py --work ds2: DeepSpeech2-small over log-mel [B, 1, T, 80] (T = 400 frames),
// CTC (blank 0, mean, zero_infinity; the trainer's loss, speech_training_loss) on 40 labels in [1,
// 28] per sample, AdamW lr 1e-3, batch 8 on the CPU, 32 on CUDA. Audio seconds per second counts
// 100 frames a second.
#include <string>

#include "base/error.h"
#include "bench/bench_work.h"
#include "engine/ops.h"
#include "engine/optim/adamw.h"
#include "engine/random.h"
#include "models/ds2.h"
#include "models/speech_training_loss.h"

namespace sonata {

BenchFields bench_ds2(const BenchOptions& options) {
  const Device device = options.device;
  const int64_t batch = options.batch ? options.batch : device.is_cuda() ? 32 : 8;
  const int64_t frames = options.size.empty() ? 400 : std::stoll(options.size);
  const int64_t labels = options.target_length ? options.target_length : 40;
  SONATA_CHECK(frames > 0, "bench_models: --size for ds2 is a number of frames, got '",
               options.size, "'");
  SONATA_CHECK(options.precision == "fp32", "bench_models: ds2 runs in fp32 only so far");

  manual_seed(0);
  auto model = std::make_shared<Ds2>(Ds2Options{});
  model->to(device);
  const Tensor x = randn({batch, 1, frames, 80}, TensorOptions{}.with(device));
  // Labels 1..28 as peer_torch.py's torch.randint(1, 29, ...), fixed across steps.
  const Tensor targets = (rand({batch, labels}) * 28.0)
                             .to(DType::i64)
                             .add_(ones({batch, labels}, TensorOptions{}.with(DType::i64)));
  const Tensor target_lengths = full({batch}, double(labels), TensorOptions{}.with(DType::i64));
  const Tensor input_lengths = full({batch}, double(frames), TensorOptions{}.with(DType::i64));
  AdamW adamw(model->parameters(), AdamOptions{.lr = 1e-3, .weight_decay = 1e-2});

  const double seconds = time_steps(options, [&] {
    adamw.zero_grad();
    speech_training_loss(*model, x, input_lengths, targets, target_lengths).backward();
    adamw.step();
  });
  BenchFields fields{{"batch", std::to_string(batch)},
                     {"step_ms", str(seconds * 1e3)},
                     {"audio_s_per_s", str(double(batch * frames) / 100.0 / seconds)}};
  add_step_peak_share(fields, options, model->layers(), {x, input_lengths}, seconds);
  return fields;
}

}  // namespace sonata
