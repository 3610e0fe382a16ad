#pragma once
// How an evaluation figure reads on the terminal: rates as labelled percentages
// ("CER 0.27 %", "beam WER 1.10 %", "accuracy 93.75 %"), other figures as they are
// ("loss 0.4123"). metrics.jsonl keeps the rates as fractions (0.0027).
#include <map>
#include <string>

namespace sonata {

// True for the figures that are fractions shown as percent.
bool is_rate_metric(const std::string& name);
std::string metric_text(const std::string& name, double value);
// Every figure of `metrics`, two spaces apart, in the map's order.
std::string metrics_text(const std::map<std::string, double>& metrics);

}  // namespace sonata
