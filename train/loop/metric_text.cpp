#include "train/loop/metric_text.h"

#include <cstdio>

namespace sonata {
namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() &&
         text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// "beam_cer" -> "beam CER", "track_accuracy" -> "track accuracy".
std::string label(const std::string& name) {
  std::string text = name;
  for (char& c : text)
    if (c == '_') c = ' ';
  if (ends_with(text, "cer") || ends_with(text, "wer"))
    for (size_t i = text.size() - 3; i < text.size(); ++i) text[i] = char(text[i] - 'a' + 'A');
  return text;
}

}  // namespace

bool is_rate_metric(const std::string& name) {
  return ends_with(name, "cer") || ends_with(name, "wer") || ends_with(name, "accuracy");
}

std::string metric_text(const std::string& name, double value) {
  char figure[96];
  if (is_rate_metric(name))
    std::snprintf(figure, sizeof figure, "%s %.2f %%", label(name).c_str(), value * 100.0);
  else
    std::snprintf(figure, sizeof figure, "%s %.4f", label(name).c_str(), value);
  return figure;
}

std::string metrics_text(const std::map<std::string, double>& metrics) {
  std::string text;
  for (const auto& [name, value] : metrics)
    text += (text.empty() ? "" : "  ") + metric_text(name, value);
  return text;
}

}  // namespace sonata
