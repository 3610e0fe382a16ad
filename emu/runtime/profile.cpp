// The emulated profile's writer: one JSON object a line, host events as they are called,
// device work as it runs (emu/runtime/profile.h; the format in docs/emulator.md).
#include "emu/runtime/profile.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace sonata::emu::profile {
namespace {

// Host frames kept per call site: enough to reach sonata's caller through the emulator's
// own entry points, library glue and sonata's launch wrappers.
constexpr int kFrames = 14;

const char* kind_name(WorkKind kind) {
  switch (kind) {
    case WorkKind::kernel:
      return "kernel";
    case WorkKind::library:
      return "library";
    case WorkKind::copy:
      return "copy";
    case WorkKind::memset:
      return "memset";
    case WorkKind::free:
      return "free";
    case WorkKind::event:
      return "event";
    case WorkKind::host_function:
      return "host_function";
    case WorkKind::other:
      break;
  }
  return "other";
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + '"';
}

class Writer {
 public:
  explicit Writer(std::FILE* file) : file_(file) {}

  // The site id of the caller's stack, written once per distinct stack.
  int site() {
    void* frames[kFrames + 3];
    const int depth = backtrace(frames, kFrames + 3);
    // Skip this function and the profile hook that called it.
    std::vector<std::pair<int, uintptr_t>> located;
    for (int i = 2; i < depth; ++i) located.push_back(locate(frames[i]));
    auto [at, added] = sites_.emplace(located, int(sites_.size()));
    if (added) {
      std::string line = "{\"ev\":\"site\",\"id\":" + std::to_string(at->second) + ",\"frames\":[";
      for (size_t i = 0; i < located.size(); ++i) {
        char frame[64];
        std::snprintf(frame, sizeof frame, "%s[%d,\"0x%zx\"]", i ? "," : "", located[i].first,
                      size_t(located[i].second));
        line += frame;
      }
      write(line + "]}");
    }
    return at->second;
  }

  // A small number per host thread, in order of first appearance.
  int thread() {
    thread_local int id = -1;
    if (id < 0) id = next_thread_++;
    return id;
  }

  void write(const std::string& line) {
    if (!file_) return;
    std::fputs(line.c_str(), file_);
    std::fputc('\n', file_);
  }
  void close() {
    if (file_) std::fclose(file_);
    file_ = nullptr;
  }

  std::mutex mutex;

 private:
  // (module id, offset in the module): stable across runs of one binary, resolvable by
  // addr2line after the run.
  std::pair<int, uintptr_t> locate(void* address) {
    Dl_info info{};
    if (!dladdr(address, &info) || !info.dli_fname) return {-1, uintptr_t(address)};
    auto [at, added] = modules_.emplace(info.dli_fname, int(modules_.size()));
    if (added)
      write("{\"ev\":\"module\",\"id\":" + std::to_string(at->second) +
            ",\"path\":" + quoted(module_path(info.dli_fname)) + "}");
    // A return address points after the call: one byte back names the call's line.
    return {at->second, uintptr_t(address) - uintptr_t(info.dli_fbase) - 1};
  }

  static std::string module_path(const char* name) {
    char resolved[4096];
    if (std::string(name).find('/') == std::string::npos) {
      const ssize_t n = readlink("/proc/self/exe", resolved, sizeof resolved - 1);
      if (n > 0) return std::string(resolved, size_t(n));
    }
    return realpath(name, resolved) ? resolved : name;
  }

  std::FILE* file_;
  std::map<std::vector<std::pair<int, uintptr_t>>, int> sites_;
  std::map<std::string, int> modules_;
  int next_thread_ = 0;
};

Writer* open_writer(const std::string& pattern) {
  std::string path = pattern;
  if (const size_t at = path.find("%p"); at != std::string::npos)
    path.replace(at, 2, std::to_string(getpid()));
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (!file) {
    std::fprintf(stderr, "sonata emu: SONATA_EMU_PROFILE: cannot write '%s'\n", path.c_str());
    std::exit(2);
  }
  auto* writer = new Writer(file);
  writer->write("{\"ev\":\"meta\",\"format\":1,\"pid\":" + std::to_string(getpid()) + "}");
  return writer;
}

// The profile being written, or null. Opened from SONATA_EMU_PROFILE on first use (and kept
// for the life of the process: exit flushes its file), or by open_profile.
std::atomic<Writer*> g_writer{nullptr};
std::once_flag g_from_environment;

Writer* writer() {
  std::call_once(g_from_environment, [] {
    const char* pattern = std::getenv("SONATA_EMU_PROFILE");
    if (pattern && *pattern) g_writer.store(open_writer(pattern));
  });
  return g_writer.load(std::memory_order_acquire);
}

// The device work running on this host thread (work may run work: a stack).
struct Running {
  uint64_t seq = 0;
  const Work* work = nullptr;
  bool has_kernel = false;
  KernelFigures kernel;
};
thread_local std::vector<Running> t_running;

std::string dims(const unsigned (&d)[3]) {
  char text[48];  // snprintf, not operator+: GCC 12's -O3 warns falsely (-Wrestrict) there
  std::snprintf(text, sizeof text, "[%u,%u,%u]", d[0], d[1], d[2]);
  return text;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

}  // namespace

thread_local const char* t_api_call = nullptr;

bool enabled() {
  return writer() != nullptr;
}

void open_profile(const std::string& path) {
  writer();  // the environment's profile first, so that it cannot replace this one later
  close_profile();
  g_writer.store(open_writer(path));
}

void close_profile() {
  Writer* old = g_writer.exchange(nullptr);
  if (!old) return;
  {
    std::lock_guard lock(old->mutex);
    old->close();
  }
  // Other threads may still hold the pointer: the object stays (reachable, for
  // LeakSanitizer), its file is closed.
  static auto* closed = new std::vector<Writer*>;
  closed->push_back(old);
}

void enqueued(uint64_t seq, int device, const void* stream, const Work& work) {
  Writer* w = writer();
  if (!w) return;
  std::lock_guard lock(w->mutex);
  const int site = w->site();
  char head[160];
  std::snprintf(head, sizeof head,
                "{\"ev\":\"enqueue\",\"seq\":%llu,\"th\":%d,\"device\":%d,\"stream\":\"%p\","
                "\"kind\":\"%s\",\"site\":%d,\"name\":",
                static_cast<unsigned long long>(seq), w->thread(), device, stream,
                kind_name(work.kind), site);
  w->write(head + quoted(work.name) + "}");
}

void driver_alloc(const char* call, size_t bytes, int device) {
  Writer* w = writer();
  if (!w) return;
  std::lock_guard lock(w->mutex);
  const int site = w->site();
  w->write("{\"ev\":\"alloc\",\"call\":" + quoted(call) + ",\"bytes\":" + std::to_string(bytes) +
           ",\"device\":" + std::to_string(device) + ",\"th\":" + std::to_string(w->thread()) +
           ",\"site\":" + std::to_string(site) + "}");
}

void driver_free(const char* call, size_t bytes, int device) {
  Writer* w = writer();
  if (!w) return;
  std::lock_guard lock(w->mutex);
  const int site = w->site();
  w->write("{\"ev\":\"free\",\"call\":" + quoted(call) + ",\"bytes\":" + std::to_string(bytes) +
           ",\"device\":" + std::to_string(device) + ",\"th\":" + std::to_string(w->thread()) +
           ",\"site\":" + std::to_string(site) + "}");
}

void host_wait(const char* call, bool pending) {
  Writer* w = writer();
  if (!w) return;
  std::lock_guard lock(w->mutex);
  const int site = w->site();
  w->write("{\"ev\":\"wait\",\"call\":" + quoted(call ? call : "(library)") +
           ",\"pending\":" + (pending ? "true" : "false") +
           ",\"th\":" + std::to_string(w->thread()) + ",\"site\":" + std::to_string(site) + "}");
}

void range_push(const char* name) {
  Writer* w = writer();
  if (!w) return;
  std::lock_guard lock(w->mutex);
  w->write("{\"ev\":\"push\",\"th\":" + std::to_string(w->thread()) +
           ",\"name\":" + quoted(name ? name : "") + "}");
}

void range_pop() {
  Writer* w = writer();
  if (!w) return;
  std::lock_guard lock(w->mutex);
  w->write("{\"ev\":\"pop\",\"th\":" + std::to_string(w->thread()) + "}");
}

void work_started(uint64_t seq, const Work& work) {
  if (!writer()) return;
  Running running;
  running.seq = seq;
  running.work = &work;
  t_running.push_back(running);
}

void kernel_figures(const KernelFigures& figures) {
  if (t_running.empty()) return;
  t_running.back().has_kernel = true;
  t_running.back().kernel = figures;
}

void work_finished() {
  Writer* w = writer();
  if (!w || t_running.empty()) return;
  const Running done = t_running.back();
  t_running.pop_back();
  const Work& work = *done.work;
  WorkCost cost = work.cost;
  if (work.kind == WorkKind::library && cost.bytes == 0) {
    // Bytes of a library call that did not state them: every range it reads and writes.
    for (const MemRange& r : work.reads) cost.bytes += double(r.bytes);
    for (const MemRange& r : work.writes) cost.bytes += double(r.bytes);
  }
  std::string line = "{\"ev\":\"work\",\"seq\":" + std::to_string(done.seq) + ",\"kind\":\"" +
                     kind_name(work.kind) + "\",\"name\":" + quoted(work.name);
  if (cost.flops > 0 || cost.bytes > 0)
    line += ",\"flops\":" + number(cost.flops) + ",\"bytes\":" + number(cost.bytes) +
            ",\"math\":" + quoted(cost.math) + ",\"library\":" + quoted(cost.library);
  if (done.has_kernel) {
    const KernelFigures& k = done.kernel;
    line += ",\"grid\":" + dims(k.grid) + ",\"block\":" + dims(k.block) +
            ",\"shared_bytes\":" + std::to_string(k.dynamic_shared_bytes) +
            ",\"ld_req\":" + std::to_string(k.load_requests) +
            ",\"ld_bytes\":" + std::to_string(k.load_bytes) +
            ",\"ld_sectors\":" + std::to_string(k.load_sectors) +
            ",\"ld_ideal\":" + std::to_string(k.load_ideal_sectors) +
            ",\"st_req\":" + std::to_string(k.store_requests) +
            ",\"st_bytes\":" + std::to_string(k.store_bytes) +
            ",\"st_sectors\":" + std::to_string(k.store_sectors) +
            ",\"st_ideal\":" + std::to_string(k.store_ideal_sectors) +
            ",\"atomic_req\":" + std::to_string(k.atomic_requests) +
            ",\"lane_acc\":" + std::to_string(k.lane_accesses) +
            ",\"narrow_acc\":" + std::to_string(k.narrow_lane_accesses) +
            ",\"sh_req\":" + std::to_string(k.shared_requests) +
            ",\"sh_wavefronts\":" + std::to_string(k.shared_wavefronts) +
            ",\"sh_ideal\":" + std::to_string(k.shared_ideal_wavefronts);
  }
  std::lock_guard lock(w->mutex);
  w->write(line + "}");
}

}  // namespace sonata::emu::profile
