// Training-step benchmark of the reference workloads, printing one JSON line in the schema of
// bench/peer_torch.py so the two can be compared side by side:
//   bench_models --work vgg19_bn --device cpu [--batch 8] [--size 1x128x128] [--steps 5]
//                [--peak full|quick|off] [--layers]
//   bench_models --work ds2 --device cpu [--batch 8] [--size 400] [--layers]
//   bench_models --work mel --device cpu [--batch 16] [--size 160000]
//   bench_models --work ctc --device cpu [--batch 32] [--size 400] [--target-length 40]
// (the last against bench/peer_ctc.py). Extra fields name the BLAS kernels and the peak
// memory, so a figure can be traced to what produced it. On the CPU, vgg19_bn and ds2 first
// print the cores' measured FMA peak (bench/fma_peak.h), one "work": "fma_peak" line per
// capability and team, and their line gains the step's multiply-adds, GFMA/s and share of the
// peak; --layers adds one line per conv and linear pass timed alone (bench/layer_passes.h).
#include <omp.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "base/error.h"
#include "base/spinning_threads.h"
#include "bench/bench_work.h"
#include "bench/fma_peak.h"
#include "comm/bootstrap.h"
#include "engine/allocator.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/gemm.h"

using namespace sonata;

int main(int argc, char** argv) {
  BenchOptions options;
  std::string device_name = "cpu";
  CLI::App app{"sonata training-step benchmark (peer_torch.py's workloads and JSON schema)"};
  app.add_option("--work", options.work, "vgg19_bn | ds2 | ctc | mel")->required();
  app.add_option("--device", device_name, "cpu | cuda | cuda:N")->capture_default_str();
  app.add_option("--precision", options.precision, "fp32 | fp16 | bf16 (vgg19_bn on CUDA)")
      ->capture_default_str();
  app.add_flag("--channels-last", options.channels_last, "vgg19_bn: NHWC convolutions");
  app.add_option("--batch", options.batch, "batch size (default: the workload's)");
  app.add_option("--size", options.size,
                 "CxHxW for vgg19_bn, frames for ds2 and ctc, samples per clip for mel");
  app.add_option("--target-length", options.target_length, "labels per sample (ds2, ctc)");
  app.add_option("--steps", options.steps, "timed steps")->capture_default_str();
  app.add_option("--warmup", options.warmup, "untimed steps first")->capture_default_str();
  app.add_option("--range-times", options.range_times,
                 "write host time per NVTX range over the timed steps here (JSONL; the CPU's "
                 "op-by-op profile, as the trainer's --range-times)");
  app.add_flag("--layers", options.layers,
               "vgg19_bn, ds2 on the CPU: time each conv and linear pass alone after the steps "
               "(one JSON line each, with its share of the FMA peak)");
  std::string peak = "full";
  app.add_option("--peak", peak,
                 "vgg19_bn, ds2 on the CPU: measure the cores' FMA peak first (full), briefly "
                 "(quick: a smoke run's, which also times each --layers pass once) or not (off)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    SONATA_CHECK(options.steps > 0, "bench_models: --steps must be positive");
    options.device = Device::parse(device_name);
    // The trainer's step on the CPU runs with spinning OpenMP threads; so does its benchmark.
    spin_openmp_threads("bench_models", argv,
                        options.device.is_cpu() && detect_launch().launcher.empty(), false);
    SONATA_CHECK(peak == "full" || peak == "quick" || peak == "off", "bench_models: --peak '", peak,
                 "' is not full, quick or off");
    // The convolution works' figures are read against the peak (the mel and CTC ones are
    // bandwidth- and latency-bound).
    const bool conv_work = options.work == "vgg19_bn" || options.work == "ds2";
    if (options.device.is_cpu() && conv_work && peak != "off") {
      const std::vector<bench::FmaPeak> peaks = bench::measure_fma_peaks(peak == "quick");
      bench::print_fma_peaks(peaks);
      options.fma_peak_gfma =
          bench::fma_peak_gfma(peaks, kernels::cpu::capability_name(), omp_get_max_threads());
    }
    options.quick = peak == "quick";
    BenchFields fields;
    if (options.work == "vgg19_bn")
      fields = bench_vgg19_bn(options);
    else if (options.work == "ds2")
      fields = bench_ds2(options);
    else if (options.work == "ctc")
      fields = bench_ctc(options);
    else if (options.work == "mel")
      fields = bench_mel(options);
    else
      throw Error(
          str("bench_models: unknown --work '", options.work, "' (vgg19_bn, ds2, ctc, mel)"));

    std::printf("{\"work\": \"%s\", \"device\": \"%s\", \"precision\": \"%s\"",
                options.work.c_str(), device_name.c_str(), options.precision.c_str());
    for (const auto& [key, value] : fields) std::printf(", \"%s\": %s", key.c_str(), value.c_str());
    const MemoryStats memory =
        options.device.is_cuda() ? cuda_memory_stats(options.device.index) : cpu_memory_stats();
    std::printf(", \"peak_mem_mib\": %.1f", double(memory.peak_allocated_bytes) / (1 << 20));
    if (options.device.is_cpu()) std::printf(", \"blas\": \"%s\"", kernels::cpu::blas_core_name());
    if (options.device.is_cpu())
      std::printf(", \"omp_wait_policy\": \"%s\"", openmp_wait_policy().c_str());
    std::printf(", \"cpu_capability\": \"%s\", \"peer\": \"sonata\"}\n",
                kernels::cpu::capability_name());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_models: %s\n", error.what());
    return 1;
  }
  return 0;
}
