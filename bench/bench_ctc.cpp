// bench/peer_ctc.py's workload: ctc_loss forward + backward on log_softmax of random logits
// [T, N, C] with N targets of L labels each (defaults T 400, N 32, C 29, L 40).
#include <string>

#include "base/error.h"
#include "bench/bench_work.h"
#include "engine/ops.h"
#include "engine/ops/ctc.h"
#include "engine/random.h"

namespace sonata {

BenchFields bench_ctc(const BenchOptions& options) {
  const Device device = options.device;
  const int64_t batch = options.batch ? options.batch : 32;
  const int64_t frames = options.size.empty() ? 400 : std::stoll(options.size);
  const int64_t labels = options.target_length ? options.target_length : 40;
  const int64_t classes = 29;
  SONATA_CHECK(frames > 0 && labels > 0,
               "bench_models: ctc needs positive --size and "
               "--target-length");

  manual_seed(0);
  Tensor logits = randn({frames, batch, classes}, TensorOptions{}.with(device));
  logits.set_requires_grad(true);
  const Tensor targets = (rand({batch, labels}) * double(classes - 1))
                             .to(DType::i64)
                             .add_(ones({batch, labels}, TensorOptions{}.with(DType::i64)));
  const Tensor target_lengths = full({batch}, double(labels), TensorOptions{}.with(DType::i64));
  const Tensor input_lengths = full({batch}, double(frames), TensorOptions{}.with(DType::i64));
  const CtcOptions ctc{.blank = 0, .reduction = Reduction::mean, .zero_infinity = true};

  const double seconds = time_steps(options, [&] {
    logits.set_grad(Tensor());
    ctc_loss(log_softmax(logits, 2), targets, input_lengths, target_lengths, ctc).backward();
  });
  return {{"batch", std::to_string(batch)},     {"frames", std::to_string(frames)},
          {"classes", std::to_string(classes)}, {"target_length", std::to_string(labels)},
          {"step_ms", str(seconds * 1e3)},      {"samples_per_s", str(double(batch) / seconds)}};
}

}  // namespace sonata
