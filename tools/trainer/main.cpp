// trainer: trains vgg19_bn or ds2 from manifests; `trainer --help` lists every option.
//   trainer --model ds2 --train train.tsv --val dev.tsv --test test.tsv --hidden 128
//           --epochs 12 --lr 3e-3 --checkpoint-dir runs/ds2
//   mpirun -np 8 trainer ...   (data parallel: one process per GPU, or per CPU socket)
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "base/determinism.h"
#include "base/error.h"
#include "base/error_text.h"
#include "base/math_mode.h"
#include "base/spinning_threads.h"
#include "comm/bootstrap.h"
#include "engine/allocator.h"
#include "engine/cuda_versions.h"
#include "engine/device.h"
#include "engine/random.h"
#include "train/loop/metric_text.h"
#include "train/tasks/make_task.h"
#include "train/train_loop.h"

namespace {

// The exit status of a run stopped by SIGTERM, SIGUSR1 or SIGINT after a checkpoint.
constexpr int kStoppedBySignal = 75;

sonata::Device pick_device(const sonata::TrainerOptions& options) {
  const std::optional<sonata::Device> chosen = options.chosen_device();
  if (!chosen)
    return sonata::cuda_device_count() > 0 ? sonata::Device::cuda(0) : sonata::Device::cpu();
  SONATA_CHECK(!chosen->is_cuda() || chosen->index < sonata::cuda_device_count(), "--device ",
               options.device, ": this machine has ", sonata::cuda_device_count(), " CUDA devices");
  return *chosen;
}

// --verbose's last line on a GPU: how the block cache served the run's tensors.
void print_cache_stats(const sonata::Device& device) {
  const sonata::CudaCacheStats cache = sonata::cuda_cache_stats(device.index);
  const auto mib = [](int64_t bytes) { return double(bytes) / double(1 << 20); };
  std::printf(
      "trainer: %s block cache: %lld allocations from cache, %lld from the driver, %.1f MiB "
      "reserved (peak %.1f), %.1f MiB cached, %lld segments given back\n",
      device.str().c_str(), static_cast<long long>(cache.hits),
      static_cast<long long>(cache.misses), mib(cache.reserved_bytes),
      mib(cache.peak_reserved_bytes), mib(cache.cached_bytes),
      static_cast<long long>(cache.segment_frees));
}

void print_eval(const char* what, const sonata::EvalResult& result) {
  std::printf("%s:  %s\n", what, sonata::metrics_text(result.metrics).c_str());
  for (const std::string& line : result.report) std::printf("%s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  sonata::TrainerOptions options;
  CLI::App app{"sonata trainer: DeepSpeech2 (CTC) or VGG19_BN (classification) from manifests"};
  sonata::add_trainer_options(app, options);
  // Not a training option (not in a checkpoint's config): how errors are printed. Read from
  // argv as well, for the errors of parsing itself.
  bool verbose = std::any_of(argv + 1, argv + argc,
                             [](const char* arg) { return std::string(arg) == "--verbose"; });
  app.add_flag("--verbose", verbose,
               "errors also name the source line that raised them (always in a debug build)");
#ifdef NDEBUG
  const bool with_location = verbose;
#else
  const bool with_location = true;
#endif
  // Under mpirun every rank reads the same command line: only the first prints its errors.
  const int launch_rank = sonata::detect_launch().rank;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (launch_rank > 0) return error.get_exit_code();
    if (error.get_exit_code() == 0) return app.exit(error);  // --help
    std::fprintf(stderr, "trainer: %s (trainer --help lists the options)\n",
                 sonata::error_text(sonata::parse_error_text(error.what()), with_location).c_str());
    return error.get_exit_code();
  }
  int rank = 0;
  try {
    options.check();
    // A driver too old for this build's runtime fails every CUDA call as if there were no
    // GPU (--device auto would quietly train on the CPU): refused here, in one sentence.
    const sonata::CudaVersions cuda = sonata::cuda_versions();
    const std::string too_old = sonata::driver_too_old(cuda);
    const bool on_cpu = options.chosen_device() && options.chosen_device()->is_cpu();
    if (!too_old.empty() && !on_cpu) throw sonata::Error(too_old);
    // Before any OpenMP region: this may execute the trainer again (base/spinning_threads.h).
    const bool trains_on_cpu =
        on_cpu || (!options.chosen_device() && sonata::cuda_device_count() == 0);
    const sonata::Launch launch = sonata::detect_launch();
    sonata::spin_openmp_threads("trainer", argv, trains_on_cpu && launch.launcher.empty(), verbose);
    // Under mpirun / srun: one process per device, data parallel; otherwise world size 1
    // and MPI untouched. CUDA ranks train on cuda:<local rank>.
    std::shared_ptr<sonata::ProcessGroup> group = sonata::init_process_group(pick_device(options));
    const sonata::Device device = group->world_size() > 1 ? group->device() : pick_device(options);
    rank = group->rank();
    const bool main_rank = rank == 0;
    if (main_rank && device.is_cuda())
      std::printf("trainer: %s\n", sonata::describe_cuda_versions(cuda).c_str());
    SONATA_CHECK(options.precision == sonata::Precision::fp32 || device.is_cuda(), "--precision ",
                 options.precision, " needs a GPU and none was found; use --precision fp32");
    sonata::manual_seed(options.seed);
    sonata::set_deterministic_algorithms(options.deterministic);
    sonata::set_tf32_mode(options.tf32.value());
    std::unique_ptr<sonata::Task> task = sonata::make_task(options);
    // Nothing reads the model after the run here: a pipeline stage never gathers the others'.
    options.gather_model = false;
    const sonata::TrainResult result = sonata::run_training(options, *task, device, group);
    if (main_rank && !result.last_val.metrics.empty()) print_eval("val", result.last_val);
    if (main_rank && !result.test.metrics.empty()) print_eval("test", result.test);
    if (verbose && device.is_cuda()) print_cache_stats(device);
    task.reset();
    group.reset();
    sonata::finalize();
    // 75 (EX_TEMPFAIL, "try again later"): stopped by a signal with a checkpoint to resume.
    return result.stopped_bad ? 3 : result.stopped_by_signal != 0 ? kStoppedBySignal : 0;
  } catch (const std::exception& error) {
    std::fflush(stdout);
    const std::string text = sonata::error_text(error.what(), with_location);
    // Under MPI one rank's error ends every rank, naming it, instead of leaving peers hanging.
    // A cause every rank meets (a missing file, a bad option) is printed once: rank 0 ends
    // the job at once, the others give it a moment to, and only print (naming their rank)
    // when their failure was their own.
    if (sonata::mpi_started()) {
      if (rank > 0) std::this_thread::sleep_for(std::chrono::seconds(5));
      sonata::abort_job(sonata::str("trainer: ", text));
    }
    // Before MPI started the cause came from the command line, the same on every rank.
    if (launch_rank > 0) return 1;
    std::fprintf(stderr, "trainer: %s\n", text.c_str());
    return 1;
  }
}
