// The main job until the trainer lands: fits a two-layer perceptron to a smooth curve with
// the core alone (tensors, autograd, addmm, tanh, pow, mean, in-place SGD), on the GPU when
// there is one, else the CPU, and prints the loss falling. Exits non-zero if the loss does
// not fall at least tenfold.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/random.h"

using namespace sonata;

int main(int argc, char** argv) {
  try {
    Device device = cuda_available() ? Device::cuda() : Device::cpu();
    int steps = 400;
    for (int i = 1; i + 1 < argc; ++i) {
      if (std::strcmp(argv[i], "--device") == 0) device = Device::parse(argv[i + 1]);
      if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
    }
    std::printf("sonata smoke run: 2-layer MLP fitting tanh(1.5x) + 0.1x^2 on %s\n",
                device.str().c_str());
    manual_seed(0);
    const TensorOptions opts = TensorOptions{}.with(device);
    const Tensor x = mul(add(rand({512, 1}, opts), -0.5), 6.0);
    const Tensor target = add(tanh(mul(x, 1.5)), mul(pow(x, 2.0), 0.1));

    const int64_t hidden = 64;
    Tensor w1 = mul(randn({1, hidden}, opts), 0.8).detach().set_requires_grad(true);
    Tensor b1 = zeros({hidden}, opts.grad());
    Tensor w2 = mul(randn({hidden, 1}, opts), 0.1).detach().set_requires_grad(true);
    Tensor b2 = zeros({1}, opts.grad());
    std::vector<Tensor*> params{&w1, &b1, &w2, &b2};

    const double lr = 0.05;
    double first_loss = 0, loss_value = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int step = 0; step <= steps; ++step) {
      const Tensor h = tanh(addmm(b1, x, w1));
      const Tensor prediction = addmm(b2, h, w2);
      const Tensor loss = mean(pow(sub(prediction, target), 2.0));
      loss.backward();
      {
        NoGradGuard no_grad;
        for (Tensor* p : params) {
          p->add_(p->grad(), -lr);
          p->set_grad(Tensor());
        }
      }
      loss_value = loss.item();
      if (step == 0) first_loss = loss_value;
      if (step % 50 == 0) std::printf("step %4d  loss %.6f\n", step, loss_value);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("loss %.6f -> %.6f in %d steps (%.2f s)\n", first_loss, loss_value, steps, seconds);
    if (!(loss_value * 10 < first_loss)) {
      std::fprintf(stderr, "smoke: the loss did not fall tenfold\n");
      return 1;
    }
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "smoke: %s\n", error.what());
    return 1;
  }
}
