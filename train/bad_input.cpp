#include "train/bad_input.h"

#include "base/error.h"
#include "base/error_text.h"
#include "train/trainer_options.h"

namespace sonata {
namespace {

// Enough to recognise a pattern (a wrong folder, a batch of truncated files) without
// flooding the log of a large dataset; the count gives the rest.
constexpr size_t kNamedSkips = 10;

}  // namespace

InputPolicy input_policy(const TrainerOptions& options) {
  const double task_default = options.is_speech() ? kSpeechMaxDuration : 0;
  return {options.bad_input == BadInput::skip,
          options.max_duration == kTaskMaxDuration ? task_default : options.max_duration};
}

void report_too_long(DataReport& report, const std::string& split,
                     const std::vector<TooLong>& inputs, const InputPolicy& policy) {
  report.counts[split + "_too_long"] = int64_t(inputs.size());
  if (!inputs.empty())
    report.lines.push_back(str("warning: ", split, ": ", describe_too_long(inputs, policy),
                               " (--max-duration 0: no limit)"));
}

std::string skipped_text(const std::vector<std::string>& reasons,
                         const std::vector<TooLong>& too_long, const char* noun,
                         const InputPolicy& policy) {
  if (reasons.empty() && too_long.empty()) return {};
  std::string text = str(" (", reasons.size() + too_long.size(), " bad ", noun, " skipped");
  if (!reasons.empty()) text += str(", the first: ", error_text(reasons.front(), false));
  if (!too_long.empty())
    text += str(reasons.empty() ? ": " : "; ", too_long.size(), " longer than --max-duration ",
                policy.max_duration, " s");
  return text + ")";
}

void report_skipped(DataReport& report, const std::string& split, const char* noun,
                    const std::vector<std::string>& reasons) {
  report.counts[split + "_skipped"] = int64_t(reasons.size());
  if (reasons.empty()) return;
  std::string line = str(split, ": ", reasons.size(), " bad ", noun, " skipped (--bad-input skip)");
  std::vector<std::string>& named = report.named[split + "_skipped_first"];
  for (size_t i = 0; i < reasons.size() && i < kNamedSkips; ++i) {
    named.push_back(error_text(reasons[i], false));  // the user's words
    line += str("\n  skipped: ", named.back());
  }
  if (reasons.size() > kNamedSkips)
    line += str("\n  ... and ", reasons.size() - kNamedSkips, " more");
  report.lines.push_back(line);
}

}  // namespace sonata
