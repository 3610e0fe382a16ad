#pragma once
// The JSONL metrics log: one JSON object per line ({"event": "train" | "eval" | ..., ...}),
// flushed as written so a crash loses nothing and `tail -f` / tools/plot_metrics.py can
// follow a run. A resumed run appends to the same file, after dropping what the interrupted
// run logged past the step it resumes from.
#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace sonata {

// What a log that cannot be opened means: an error, or (a log only worth keeping, as an
// evaluation's of a finished run, whose folder may be read-only) a log that writes nothing.
enum class IfUnwritable { refuse, write_nothing };

class MetricsLog {
 public:
  MetricsLog() = default;  // writes nothing
  MetricsLog(const std::string& path, bool append,
             IfUnwritable if_unwritable = IfUnwritable::refuse);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  void write(const nlohmann::ordered_json& record);
  // Drops the records whose "step" is past `step`, and a last line that a kill cut short,
  // by writing the rest to a new file renamed over the log: a kill meanwhile leaves the old
  // log or the new one, whole. Other lines are kept as they are.
  void drop_after_step(int64_t step);
  const std::string& path() const { return path_; }
  // Why a write_nothing log writes nothing (the system's reason), else "".
  const std::string& unwritable() const { return unwritable_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::string unwritable_;
};

}  // namespace sonata
