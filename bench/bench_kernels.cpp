// Kernel benchmark: the engine's ops one at a time, read against ceilings measured on the
// same device, one JSON line per kernel and pass, with the keys of bench/peer_kernels.py:
//   bench_kernels [--kernel gemm|conv|bn_relu|softmax_ce|lstm_step|ctc|optimizer|all]
//                 [--device cpu|cuda] [--precision fp32|fp16|bf16] [--shape 1024,1024,640]
//                 [--quick]
// First, on the CPU, it measures the cores' FMA peak at every capability on one thread and on
// the kernels' team (one "work": "fma_peak" line each, bench/fma_peak.h); each kernel's line
// then carries its GFMA/s and its share of that peak at the active capability and team.
// Then the ceilings: copy bandwidth (a threaded memcpy on the CPU, a
// device-to-device cudaMemcpyAsync on CUDA; read + written bytes) and a large square GEMM's
// rate in the precision. Then each kernel's forward (and backward, a separate line, timed
// alone on a retained graph) rotates over at least --sets input sets that together exceed
// --rotate-mib (default: twice the last-level cache, 256 MiB at least), so no figure
// measures the cache. Each line: step_ms, achieved gbps and tflops, the compulsory bytes
// and flops (bench/kernel_cost.h), floor_ms = max(bytes / bandwidth, flops / rate)
// and floor_ratio = floor_ms / step_ms (1 would be at the ceiling). All-reduce has its own
// tool, bench_allreduce.
#include <omp.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "base/error.h"
#include "bench/fma_peak.h"
#include "bench/kernel_bench.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/gemm.h"

using namespace sonata;
using namespace sonata::bench;

namespace {

using KernelRunner = std::vector<KernelResult> (*)(const KernelBenchOptions&);

const std::vector<std::pair<std::string, KernelRunner>>& kernel_table() {
  static const std::vector<std::pair<std::string, KernelRunner>> table{
      {"gemm", bench_gemm},           {"conv", bench_conv},
      {"bn_relu", bench_bn_relu},     {"softmax_ce", bench_softmax_ce},
      {"lstm_step", bench_lstm_step}, {"ctc", bench_ctc_kernel},
      {"optimizer", bench_optimizer}};
  return table;
}

DType precision_dtype(const std::string& precision, Device device) {
  const std::map<std::string, DType> dtypes{
      {"fp32", DType::f32}, {"fp16", DType::f16}, {"bf16", DType::bf16}};
  const auto found = dtypes.find(precision);
  SONATA_CHECK(found != dtypes.end(), "bench_kernels: unknown --precision '", precision,
               "' (fp32, fp16, bf16)");
  SONATA_CHECK(found->second == DType::f32 || device.is_cuda(), "bench_kernels: --precision ",
               precision, " needs --device cuda (the CPU kernels run f32)");
  return found->second;
}

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> sizes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int64_t size = 0;
    try {
      size = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    SONATA_CHECK(used == item.size() && used > 0, "bench_kernels: --shape '", text,
                 "' must be integers separated by commas");
    sizes.push_back(size);
  }
  return sizes;
}

// peak_gfma: the measured FMA peak at the active capability on the kernels' threads (CPU);
// 0 elsewhere. check_peak: warn when a kernel runs above it.
void print_result(const KernelResult& result, const std::string& device, const Ceilings& ceilings,
                  double peak_gfma, bool check_peak) {
  const double seconds = result.timing.seconds_per_call;
  const double floor = floor_ms(result.cost, ceilings);
  std::printf(
      "{\"work\": \"kernel:%s\", \"pass\": \"%s\", \"device\": \"%s\", \"precision\": \"%s\", "
      "\"shape\": \"%s\", \"sets\": %d, \"calls\": %lld, \"step_ms\": %.6g, \"gbps\": %.6g, "
      "\"tflops\": %.6g, \"bytes\": %.0f, \"flops\": %.0f, \"floor_ms\": %.6g, "
      "\"floor_ratio\": %.4g, \"ceilings\": {\"copy_gbps\": %.6g, \"gemm_tflops\": %.6g}",
      result.kernel.c_str(), result.pass == Pass::forward ? "forward" : "backward", device.c_str(),
      result.precision.c_str(), result.shape.c_str(), result.sets,
      static_cast<long long>(result.timing.calls), seconds * 1e3, result.cost.bytes / seconds / 1e9,
      result.cost.flops / seconds / 1e12, result.cost.bytes, result.cost.flops, floor,
      floor / (seconds * 1e3), ceilings.copy_gbps, ceilings.gemm_tflops);
  if (device == "cpu")
    std::printf(", \"threads\": %d, \"blas\": \"%s\"", omp_get_max_threads(),
                kernels::cpu::blas_core_name());
  if (peak_gfma > 0) {
    // One multiply-add is two of the cost's flops.
    const double gfma = result.cost.flops / 2 / seconds / 1e9;
    std::printf(", \"gfma_per_s\": %.4g, \"fma_peak_gfma\": %.4g, \"peak_share\": %.3g", gfma,
                peak_gfma, gfma / peak_gfma);
    // No kernel can beat the pipes: if one does, the peak's chains or the kernel's flop count
    // are wrong, and every share printed is suspect. (A --quick peak is five 1 ms runs, too
    // few on a loaded machine to be a ceiling; it is not checked.)
    if (gfma > peak_gfma && check_peak)
      std::fprintf(stderr,
                   "bench_kernels: kernel:%s ran at %.4g GFMA/s, above the measured FMA peak "
                   "%.4g: the peak or the kernel's flop count is wrong\n",
                   result.kernel.c_str(), gfma, peak_gfma);
  }
  std::printf(", \"cpu_capability\": \"%s\", \"peer\": \"sonata\"}\n",
              kernels::cpu::capability_name());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string kernel = "all", device_name = "cpu", shape;
  KernelBenchOptions options;
  double rotate_mib = -1, min_seconds = -1;
  CLI::App app{"sonata kernel benchmark against the device's measured ceilings"};
  app.add_option("--kernel", kernel,
                 "gemm | conv | bn_relu | softmax_ce | lstm_step | ctc | optimizer | all")
      ->capture_default_str();
  app.add_option("--device", device_name, "cpu | cuda | cuda:N")->capture_default_str();
  app.add_option("--precision", options.precision, "fp32 | fp16 | bf16 (CUDA)")
      ->capture_default_str();
  app.add_option("--shape", shape, "one kernel's sizes, comma-separated (see the JSON shape)");
  app.add_option("--sets", options.min_sets, "input sets rotated at least")->capture_default_str();
  app.add_option("--rotate-mib", rotate_mib,
                 "the sets together exceed this (default: twice the last-level cache, 256 "
                 "at least)");
  app.add_option("--min-calls", options.min_calls, "timed calls at least")->capture_default_str();
  app.add_option("--min-time", min_seconds, "timed seconds at least (default 0.25 CPU, 0.1 CUDA)");
  app.add_flag("--quick", options.quick, "tiny sizes, one timed call: a smoke run");
  CLI11_PARSE(app, argc, argv);
  try {
    options.device = Device::parse(device_name);
    if (options.device.is_cuda() && !cuda_available()) {
      std::fprintf(stderr, "bench_kernels: skipped --device %s: %s\n", device_name.c_str(),
                   cuda_unavailable_reason().c_str());
      return 77;
    }
    options.dtype = precision_dtype(options.precision, options.device);
    options.shape = parse_shape(shape);
    SONATA_CHECK(options.min_sets > 0 && options.min_calls > 0,
                 "bench_kernels: --sets and --min-calls must be positive");
    SONATA_CHECK(options.shape.empty() || kernel != "all",
                 "bench_kernels: --shape needs one --kernel, not all");
    if (options.quick) {
      options.min_calls = 1;
      options.min_seconds = 0;
      options.rotate_bytes = 0;
    } else {
      options.min_seconds = min_seconds >= 0 ? min_seconds : options.device.is_cuda() ? 0.1 : 0.25;
      options.rotate_bytes =
          rotate_mib >= 0 ? rotate_mib * double(1 << 20)
                          : std::max(double(256 << 20), 2 * last_level_cache_bytes(options.device));
    }
    std::vector<std::pair<std::string, KernelRunner>> chosen;
    for (const auto& entry : kernel_table())
      if (kernel == "all" || kernel == entry.first) chosen.push_back(entry);
    SONATA_CHECK(!chosen.empty(), "bench_kernels: unknown --kernel '", kernel,
                 "' (gemm, conv, bn_relu, softmax_ce, lstm_step, ctc, optimizer, all)");

    double peak_gfma = 0;
    if (options.device.is_cpu()) {
      const std::vector<FmaPeak> peaks = measure_fma_peaks(options.quick);
      print_fma_peaks(peaks);
      peak_gfma = fma_peak_gfma(peaks, kernels::cpu::capability_name(), omp_get_max_threads());
    }
    const Ceilings ceilings = measure_ceilings(options);
    // CTC and the optimizer run f32 whatever the precision: their floors need f32's rate.
    Ceilings f32_ceilings = ceilings;
    const bool needs_f32 = std::any_of(chosen.begin(), chosen.end(), [](const auto& entry) {
      return entry.first == "ctc" || entry.first == "optimizer";
    });
    if (options.dtype != DType::f32 && needs_f32) f32_ceilings = measure_ceilings(in_f32(options));
    for (const auto& [name, run] : chosen)
      for (const KernelResult& result : run(options))
        print_result(result, device_name,
                     result.precision == options.precision ? ceilings : f32_ceilings, peak_gfma,
                     !options.quick);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_kernels: %s\n", error.what());
    return 1;
  }
  return 0;
}
