#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif
#include "emu/exec/executor.h"
#include "emu/exec/read_only.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <numeric>
#include <source_location>
#include <sstream>
#include <vector>

#include "emu/exec/access_profile.h"
#include "emu/exec/device_api.h"
#include "emu/exec/fiber.h"
#include "emu/exec/report.h"
#include "emu/exec/shared_memory.h"
#include "emu/runtime/device_work.h"

namespace sonata::emu::exec {

namespace {
// The running CUDA thread's built-in variables (emu/include/device_launch_parameters.h).
__thread uint3 t_thread_idx __attribute__((tls_model("initial-exec")));
__thread uint3 t_block_idx __attribute__((tls_model("initial-exec")));
__thread dim3 t_block_dim __attribute__((tls_model("initial-exec")));
__thread dim3 t_grid_dim __attribute__((tls_model("initial-exec")));
}  // namespace

uint3 thread_idx() {
  return t_thread_idx;
}
uint3 block_idx() {
  return t_block_idx;
}
dim3 block_dim() {
  return t_block_dim;
}
dim3 grid_dim() {
  return t_grid_dim;
}

__thread bool t_in_kernel = false;
__thread ThreadClock t_clock;

namespace {

namespace ctx = boost::context::detail;

constexpr size_t kStackBytes = 64 * 1024;
constexpr int kWarp = 32;

enum class State : uint8_t { fresh, ready, at_barrier, at_warp_op, exited };

struct Worker;

struct CudaThread {
  uint3 idx{};
  uint32_t linear = 0, warp = 0, lane = 0;
  State state = State::fresh;
  Worker* worker = nullptr;
  uint32_t lane_epoch = 0;
  // What the thread waits at.
  std::source_location site;
  BarrierKind barrier = BarrierKind::sync;
  int predicate = 0;
  int barrier_result = 0;
  WarpOp op = WarpOp::sync;
  unsigned mask = 0;
  uint64_t value = 0;
  int operand = 0, width = kWarp;
  uint64_t warp_result = 0;
};

// A fiber: it runs CUDA threads one after another (the next one is passed when it is
// resumed at the top of its loop).
struct Worker {
  Stack stack;
  ctx::fcontext_t context = nullptr;
};

// Per host thread: the block being run and the fibers' stacks.
struct HostState {
  StackPool stacks{kStackBytes};
  std::vector<Worker*> idle;  // fibers waiting at the top of their loop
  const GridLaunch* launch = nullptr;
  std::vector<CudaThread>* threads = nullptr;
  uint3 block_idx{};
  CudaThread* current = nullptr;
  ctx::fcontext_t host_context = nullptr;
  const void* host_stack_bottom = nullptr;
  size_t host_stack_size = 0;
  bool faulted = false;
};

HostState& host() {
  // Leaked on purpose: fibers may still hold stacks at exit. Every host thread that drives
  // the scheduler (a loader worker polling an event) has one, so LeakSanitizer is told.
  static thread_local HostState* state = [] {
    auto* created = new HostState;
#if defined(__SANITIZE_ADDRESS__)
    __lsan_ignore_object(created);
#endif
    return created;
  }();
  return *state;
}

uint32_t g_interval = 0;  // barrier intervals and blocks, unique over the process
uint32_t g_block_serial = 0;

std::string site_text(const std::source_location& site) {
  std::ostringstream out;
  out << site.file_name() << ':' << site.line();
  return out.str();
}

bool same_site(const std::source_location& a, const std::source_location& b) {
  return a.line() == b.line() && a.column() == b.column() &&
         (a.file_name() == b.file_name() || std::strcmp(a.file_name(), b.file_name()) == 0);
}

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::sync:
      return "__syncwarp";
    case WarpOp::shfl:
      return "__shfl_sync";
    case WarpOp::shfl_up:
      return "__shfl_up_sync";
    case WarpOp::shfl_down:
      return "__shfl_down_sync";
    case WarpOp::shfl_xor:
      return "__shfl_xor_sync";
    case WarpOp::ballot:
      return "__ballot_sync";
    case WarpOp::any:
      return "__any_sync";
    case WarpOp::all:
      return "__all_sync";
  }
  return "?";
}
const char* barrier_name(BarrierKind kind) {
  switch (kind) {
    case BarrierKind::sync:
      return "__syncthreads";
    case BarrierKind::count:
      return "__syncthreads_count";
    case BarrierKind::any:
      return "__syncthreads_or";
    case BarrierKind::all:
      return "__syncthreads_and";
  }
  return "?";
}

std::string waits_at(const CudaThread& t) {
  std::ostringstream out;
  switch (t.state) {
    case State::exited:
      out << "has exited";
      break;
    case State::at_barrier:
      out << "waits at " << barrier_name(t.barrier) << " (" << site_text(t.site) << ")";
      break;
    case State::at_warp_op:
      out << "waits at " << op_name(t.op) << " (" << site_text(t.site) << ") with mask 0x"
          << std::hex << t.mask;
      break;
    default:
      out << "runs";
      break;
  }
  return out.str();
}

// splitmix64: the seeded order of the threads between sync points.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

void report(const CudaThread& t, cudaError_t error, const std::string& check,
            const std::string& detail) {
  HostState& h = host();
  const std::string message = format_report(check, h.launch->name, h.block_idx, t.idx, detail);
  std::fputs(message.c_str(), stderr);
  std::fflush(stderr);
  h.faulted = true;
  report_device_fault(error, message);
}

// Fiber side: back to the host loop. Returns when the host resumes this thread.
void yield_to_host() {
  HostState& h = host();
  t_in_kernel = false;
  ctx::transfer_t back = switch_to(h.host_context, nullptr, h.host_stack_bottom, h.host_stack_size,
                                   &h.host_stack_bottom, &h.host_stack_size);
  h.host_context = back.fctx;
}

void worker_main(ctx::transfer_t start) {
  HostState& h = host();
  finish_first_switch(&h.host_stack_bottom, &h.host_stack_size);
  h.host_context = start.fctx;
  for (;;) {
    CudaThread* thread = h.current;
    bool threw = false;
    try {
      h.launch->body();
    } catch (const std::exception& error) {
      report_fault(cudaErrorLaunchFailure, "Exception thrown by kernel code", error.what());
      threw = true;
    } catch (...) {
      report_fault(cudaErrorLaunchFailure, "Exception thrown by kernel code",
                   "(not a std::exception)");
      threw = true;
    }
    if (threw) stop_thread();  // the exception object is gone by now
    thread->state = State::exited;
    yield_to_host();  // resumed at the top of the loop with the next thread in h.current
  }
}

// Host side: runs `t` until it waits or exits.
void resume(CudaThread& t) {
  HostState& h = host();
  if (!t.worker) {
    if (!h.idle.empty()) {
      t.worker = h.idle.back();
      h.idle.pop_back();
    } else {
      t.worker = new Worker;
      t.worker->stack = h.stacks.acquire();
      t.worker->context =
          ctx::make_fcontext(t.worker->stack.top(), t.worker->stack.usable_bytes(), worker_main);
    }
  }
  h.current = &t;
  t_thread_idx = t.idx;
  t_clock.thread = t.linear;
  t_clock.lane_epoch = t.lane_epoch;
  t.state = State::ready;
  t_in_kernel = true;
  const void* ignored_bottom = nullptr;
  size_t ignored_size = 0;
  ctx::transfer_t back = switch_to(t.worker->context, nullptr, t.worker->stack.usable_bottom(),
                                   t.worker->stack.usable_bytes(), &ignored_bottom, &ignored_size);
  t_in_kernel = false;
  t.worker->context = back.fctx;
  if (t.state == State::exited) {
    h.idle.push_back(t.worker);
    t.worker = nullptr;
  }
}

// Warp collectives whose lanes have all arrived complete; returns whether any did.
bool complete_warp_ops(std::vector<CudaThread>& threads, uint32_t& warp_epoch_counter) {
  bool progressed = false;
  const size_t n = threads.size();
  for (size_t i = 0; i < n; ++i) {
    CudaThread& t = threads[i];
    if (t.state != State::at_warp_op) continue;
    const size_t base = size_t(t.warp) * kWarp;
    bool complete = true;
    for (int lane = 0; lane < kWarp && complete; ++lane) {
      if (!(t.mask >> lane & 1u)) continue;
      const size_t j = base + lane;
      if (j >= n) {
        complete = false;
        break;
      }
      const CudaThread& o = threads[j];
      complete = o.state == State::at_warp_op && o.op == t.op && o.mask == t.mask &&
                 same_site(o.site, t.site);
    }
    if (!complete) continue;
    // Results: every lane of the mask at once.
    uint64_t ballot = 0;
    for (int lane = 0; lane < kWarp; ++lane)
      if ((t.mask >> lane & 1u) && threads[base + lane].value) ballot |= 1ull << lane;
    const uint32_t epoch = ++warp_epoch_counter;
    for (int lane = 0; lane < kWarp; ++lane) {
      if (!(t.mask >> lane & 1u)) continue;
      CudaThread& o = threads[base + lane];
      const int width = o.width;
      const int segment = lane & ~(width - 1);
      int source = lane;
      switch (o.op) {
        case WarpOp::shfl:
          source = segment + (o.operand & (width - 1));
          break;
        case WarpOp::shfl_up:
          source = lane - o.operand >= segment ? lane - o.operand : lane;
          break;
        case WarpOp::shfl_down:
          source = lane + o.operand < segment + width ? lane + o.operand : lane;
          break;
        case WarpOp::shfl_xor: {
          const int j = lane ^ o.operand;
          source = j < segment + width && j < kWarp ? j : lane;
          break;
        }
        default:
          break;
      }
      switch (o.op) {
        case WarpOp::ballot:
          o.warp_result = ballot;
          break;
        case WarpOp::any:
          o.warp_result = ballot != 0;
          break;
        case WarpOp::all:
          o.warp_result = ballot == (t.mask & 0xffffffffull);
          break;
        case WarpOp::sync:
          o.warp_result = 0;
          break;
        default:
          if (!(t.mask >> source & 1u)) {
            report(
                o, cudaErrorLaunchFailure, "synccheck: Invalid shuffle source lane",
                std::string(op_name(o.op)) + " at " + site_text(o.site) + " reads lane " +
                    std::to_string(source) + ", which is not in its mask 0x" + [&] {
                      std::ostringstream hex;
                      hex << std::hex << t.mask;
                      return hex.str();
                    }());
            return false;
          }
          o.warp_result = threads[base + source].value;
          break;
      }
    }
    for (int lane = 0; lane < kWarp; ++lane) {
      if (!(t.mask >> lane & 1u)) continue;
      CudaThread& o = threads[base + lane];
      o.lane_epoch = epoch;
      o.state = State::ready;
    }
    progressed = true;
  }
  return progressed;
}

// Nothing can run and no collective completes: either every live thread waits at the same
// barrier (release it) or the block is stuck, which is reported. Returns false when stuck.
bool resolve_barrier(std::vector<CudaThread>& threads) {
  CudaThread* first_barrier = nullptr;
  CudaThread* first_warp = nullptr;
  for (CudaThread& t : threads) {
    if (t.state == State::at_barrier && !first_barrier) first_barrier = &t;
    if (t.state == State::at_warp_op && !first_warp) first_warp = &t;
  }
  if (first_warp) {
    // A collective that cannot complete: name the first lane of its mask that is not there.
    CudaThread& t = *first_warp;
    const size_t base = size_t(t.warp) * kWarp;
    for (int lane = 0; lane < kWarp; ++lane) {
      if (!(t.mask >> lane & 1u)) continue;
      const size_t j = base + lane;
      std::ostringstream detail;
      detail << op_name(t.op) << " at " << site_text(t.site) << " with mask 0x" << std::hex
             << t.mask << std::dec << " names lane " << lane;
      if (j >= threads.size()) {
        detail << ", which does not exist in this block";
      } else {
        const CudaThread& o = threads[j];
        if (o.state == State::at_warp_op && o.op == t.op && o.mask == t.mask &&
            same_site(o.site, t.site))
          continue;
        detail << " (thread (" << o.idx.x << ',' << o.idx.y << ',' << o.idx.z << ")), which "
               << waits_at(o);
      }
      report(t, cudaErrorLaunchFailure, "synccheck: Invalid mask: a named lane is not taking part",
             detail.str());
      return false;
    }
  }
  if (!first_barrier) return true;  // everyone exited
  for (CudaThread& t : threads) {
    if (t.state == State::exited || t.state == State::at_barrier) {
      if (t.state == State::at_barrier &&
          (t.barrier != first_barrier->barrier || !same_site(t.site, first_barrier->site))) {
        std::ostringstream detail;
        detail << "Divergent thread(s) in block: thread (" << first_barrier->idx.x << ','
               << first_barrier->idx.y << ',' << first_barrier->idx.z << ") "
               << waits_at(*first_barrier) << ", this thread " << waits_at(t);
        report(t, cudaErrorLaunchFailure, "synccheck: Barrier error detected", detail.str());
        return false;
      }
      continue;
    }
    std::ostringstream detail;
    detail << "Divergent thread(s) in block: thread (" << first_barrier->idx.x << ','
           << first_barrier->idx.y << ',' << first_barrier->idx.z << ") "
           << waits_at(*first_barrier) << ", this thread " << waits_at(t);
    report(t, cudaErrorLaunchFailure, "synccheck: Barrier error detected", detail.str());
    return false;
  }
  // Every live thread is at the same barrier: release it.
  int count = 0, live = 0;
  for (const CudaThread& t : threads)
    if (t.state == State::at_barrier) {
      ++live;
      count += t.predicate != 0;
    }
  int result = 0;
  switch (first_barrier->barrier) {
    case BarrierKind::sync:
      result = 0;
      break;
    case BarrierKind::count:
      result = count;
      break;
    case BarrierKind::any:
      result = count > 0;
      break;
    case BarrierKind::all:
      result = count == live;
      break;
  }
  t_clock.interval = ++g_interval;
  for (CudaThread& t : threads)
    if (t.state == State::at_barrier) {
      t.barrier_result = result;
      t.state = State::ready;
    }
  return true;
}

// Returns false when the block faulted.
bool run_block(const GridLaunch& launch, uint3 block_idx, Rng& rng,
               std::vector<CudaThread>& threads, std::vector<uint32_t>& order) {
  HostState& h = host();
  h.block_idx = block_idx;
  h.threads = &threads;
  t_block_idx = block_idx;
  const dim3 b = launch.block;
  const size_t n = size_t(b.x) * b.y * b.z;
  threads.assign(n, CudaThread{});
  for (size_t i = 0; i < n; ++i) {
    CudaThread& t = threads[i];
    t.linear = uint32_t(i);
    t.idx = uint3{unsigned(i % b.x), unsigned(i / b.x % b.y), unsigned(i / (size_t(b.x) * b.y))};
    t.warp = uint32_t(i / kWarp);
    t.lane = uint32_t(i % kWarp);
  }
  t_clock.block_serial = ++g_block_serial;
  t_clock.interval = ++g_interval;
  begin_block_shared(launch.dynamic_shared_bytes);
  if (g_access_profile) access_profile_begin_block(n);
  uint32_t warp_epochs = 0;
  for (;;) {
    order.clear();
    for (size_t i = 0; i < n; ++i)
      if (threads[i].state == State::fresh || threads[i].state == State::ready)
        order.push_back(uint32_t(i));
    if (!order.empty()) {
      for (size_t i = order.size() - 1; i > 0; --i)
        std::swap(order[i], order[rng.next() % (i + 1)]);
      for (uint32_t i : order) {
        resume(threads[i]);
        if (h.faulted) return false;
      }
      continue;
    }
    if (complete_warp_ops(threads, warp_epochs)) continue;
    if (h.faulted) return false;
    bool any_live = false;
    for (const CudaThread& t : threads) any_live |= t.state != State::exited;
    if (!any_live) {
      if (g_access_profile) access_profile_end_block();
      return true;
    }
    if (!resolve_barrier(threads)) return false;
  }
}

// After a fault the block's suspended fibers never resume: their stacks go back to the
// pool without unwinding (CUDA threads own nothing that needs a destructor).
void abandon(std::vector<CudaThread>& threads) {
  HostState& h = host();
  for (CudaThread& t : threads)
    if (t.worker) {
      h.stacks.release(t.worker->stack);
      delete t.worker;
      t.worker = nullptr;
    }
}

}  // namespace

void report_fault(cudaError_t error, const std::string& check, const std::string& detail) {
  HostState& h = host();
  report(*h.current, error, check, detail);
}

void stop_thread() {
  for (;;) yield_to_host();  // the host never resumes a faulted grid
}

size_t current_dynamic_shared_bytes() {
  const HostState& h = host();
  return h.launch ? h.launch->dynamic_shared_bytes : 0;
}

void run_grid(const GridLaunch& launch) {
  HostState& h = host();
  if (h.launch) {
    std::fprintf(stderr, "sonata emu: kernel %s launched from inside kernel %s\n",
                 launch.name.c_str(), h.launch->name.c_str());
    std::abort();
  }
  h.launch = &launch;
  h.faulted = false;
  init_shared_memory();
  reset_access_cache();
  reset_read_only();
  t_grid_dim = launch.grid;
  t_block_dim = launch.block;
  Rng rng{launch.seed};
  if (g_access_profile) access_profile_begin_grid();
  std::vector<CudaThread> threads;
  std::vector<uint32_t> order;
  // Blocks run one at a time in a seeded order (an affine permutation of the linear block
  // index), since a card promises no order between blocks.
  const dim3 g = launch.grid;
  const uint64_t blocks = uint64_t(g.x) * g.y * g.z;
  uint64_t stride = 1, offset = 0;
  if (blocks > 1) {
    offset = rng.next() % blocks;
    do {
      stride = 1 + rng.next() % (blocks - 1);
    } while (std::gcd(stride, blocks) != 1);
  }
  for (uint64_t i = 0; i < blocks; ++i) {
    const uint64_t b = (offset + static_cast<unsigned __int128>(stride) * i % blocks) % blocks;
    const uint3 index{unsigned(b % g.x), unsigned(b / g.x % g.y),
                      unsigned(b / (uint64_t(g.x) * g.y))};
    if (!run_block(launch, index, rng, threads, order)) {
      abandon(threads);
      break;
    }
  }
  h.launch = nullptr;
  h.current = nullptr;
  if (g_access_profile) {
    profile::KernelFigures figures = access_profile_end_grid();
    figures.grid[0] = g.x, figures.grid[1] = g.y, figures.grid[2] = g.z;
    figures.block[0] = launch.block.x, figures.block[1] = launch.block.y,
    figures.block[2] = launch.block.z;
    figures.dynamic_shared_bytes = launch.dynamic_shared_bytes;
    profile::kernel_figures(figures);
  }
}

// ---------------------------------------------------------------------------------------
// Called by kernel code (device_api.h)

namespace {
CudaThread& running_thread(const char* what, const std::source_location& site) {
  HostState& h = host();
  if (!h.current || !t_in_kernel) {
    std::fprintf(stderr, "sonata emu: %s called outside a kernel at %s\n", what,
                 site_text(site).c_str());
    std::abort();
  }
  return *h.current;
}
}  // namespace

int block_barrier(BarrierKind kind, int predicate, const std::source_location& site) {
  CudaThread& t = running_thread(barrier_name(kind), site);
  t.state = State::at_barrier;
  t.barrier = kind;
  t.predicate = predicate;
  t.site = site;
  yield_to_host();
  return t.barrier_result;
}

uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int operand, int width,
                         const std::source_location& site) {
  CudaThread& t = running_thread(op_name(op), site);
  if (!(mask >> t.lane & 1u)) {
    {
      std::ostringstream detail;
      detail << op_name(op) << " at " << site_text(site) << ": mask 0x" << std::hex << mask
             << std::dec << " does not name the calling lane " << t.lane;
      report_fault(cudaErrorLaunchFailure, "synccheck: Invalid mask", detail.str());
    }
    stop_thread();
  }
  if (width <= 0 || width > kWarp || (width & (width - 1)) != 0) {
    report_fault(cudaErrorLaunchFailure, "synccheck: Invalid shuffle width",
                 std::string(op_name(op)) + " at " + site_text(site) + ": width " +
                     std::to_string(width) + " is not a power of 2 up to 32");
    stop_thread();
  }
  t.state = State::at_warp_op;
  t.op = op;
  t.mask = mask;
  t.value = value;
  t.operand = operand;
  t.width = width;
  t.site = site;
  yield_to_host();
  return t.warp_result;
}

unsigned active_lanes() {
  HostState& h = host();
  if (!h.current || !h.threads) return 0;
  const size_t base = size_t(h.current->warp) * kWarp;
  unsigned lanes = 0;
  for (size_t lane = 0; lane < kWarp && base + lane < h.threads->size(); ++lane)
    if ((*h.threads)[base + lane].state != State::exited) lanes |= 1u << lane;
  return lanes;
}

void trap(const char* what, const std::source_location& site) {
  report_fault(cudaErrorLaunchFailure, "Device-side trap",
               std::string(what) + " at " + site_text(site));
  stop_thread();
}

}  // namespace sonata::emu::exec
