#include "tools/trainer/bad_input.h"

#include "base/error.h"

namespace sonata {
namespace {

// Enough to recognise a pattern (a wrong folder, a batch of truncated files) without
// drowning the start of the run; the count gives the rest.
constexpr size_t kNamedSkips = 5;

}  // namespace

InputPolicy input_policy(const TrainerOptions& options) {
  return {options.bad_input == "skip", options.max_duration};
}

void report_skipped(DataReport& report, const std::string& split, const char* noun,
                    const std::vector<std::string>& reasons) {
  report.counts[split + "_skipped"] = int64_t(reasons.size());
  if (reasons.empty()) return;
  std::string line = str(split, ": ", reasons.size(), " bad ", noun, " skipped (--bad-input skip)");
  for (size_t i = 0; i < reasons.size() && i < kNamedSkips; ++i)
    line += str("\n  skipped: ", reasons[i]);
  if (reasons.size() > kNamedSkips)
    line += str("\n  ... and ", reasons.size() - kNamedSkips, " more");
  report.lines.push_back(line);
}

}  // namespace sonata
