// check_compatible (engine/checkpoint/checkpoint.h): every way a checkpoint differs from the
// model it is about to be loaded into, in one error, before anything is copied.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/checkpoint/checkpoint.h"

namespace sonata {
namespace {

constexpr size_t kListedTensorProblems = 10;
constexpr size_t kShownTextChars = 60;
constexpr size_t kContextBeforeDifference = 20;

// `text` from `begin`, at most kShownTextChars of it, "..." marking what is cut.
std::string excerpt(const std::string& text, size_t begin) {
  begin = std::min(begin, text.size());
  std::string out = begin > 0 ? "..." : "";
  out += text.substr(begin, kShownTextChars);
  if (begin + kShownTextChars < text.size()) out += "...";
  return out;
}

// Both values, shortened around their first difference so that it shows.
std::string text_difference(const std::string& key, const std::string& ours,
                            const std::string& theirs) {
  const auto mismatch = std::mismatch(ours.begin(), ours.end(), theirs.begin(), theirs.end());
  const size_t first = size_t(mismatch.first - ours.begin());
  const size_t begin = first > kContextBeforeDifference ? first - kContextBeforeDifference : 0;
  return str("'", key, "' is \"", excerpt(ours, begin), "\" in the checkpoint but \"",
             excerpt(theirs, begin), "\" here (they differ from character ", first, ")");
}

}  // namespace

void check_compatible(const TrainingState& checkpoint, const NamedTensors& expected_model,
                      const std::map<std::string, std::string>& expected_texts) {
  std::vector<TensorSpec> specs;
  for (const auto& [name, tensor] : checkpoint.model)
    specs.push_back({name, tensor.dtype(), tensor.shape()});
  check_compatible(specs, checkpoint.texts, expected_model, expected_texts);
}

void check_compatible(const std::vector<TensorSpec>& checkpoint_model,
                      const std::map<std::string, std::string>& checkpoint_texts,
                      const NamedTensors& expected_model,
                      const std::map<std::string, std::string>& expected_texts) {
  std::map<std::string, const TensorSpec*> saved;
  for (const TensorSpec& spec : checkpoint_model) saved[spec.name] = &spec;
  std::vector<std::string> tensor_problems;
  std::map<std::string, bool> expected_names;
  for (const auto& [name, tensor] : expected_model) {
    expected_names[name] = true;
    const auto found = saved.find(name);
    if (found == saved.end()) {
      tensor_problems.push_back(str("tensor '", name, "' is missing"));
      continue;
    }
    const TensorSpec& theirs = *found->second;
    if (theirs.shape != tensor.shape() || theirs.dtype != tensor.dtype())
      tensor_problems.push_back(str("tensor '", name, "' is ", dtype_name(theirs.dtype), " ",
                                    shape_str(theirs.shape), " in the checkpoint but ",
                                    dtype_name(tensor.dtype()), " ", shape_str(tensor.shape()),
                                    " in the model"));
  }
  for (const TensorSpec& spec : checkpoint_model)
    if (!expected_names.count(spec.name))
      tensor_problems.push_back(str("tensor '", spec.name, "' is not in the model"));

  std::vector<std::string> problems(
      tensor_problems.begin(),
      tensor_problems.begin() + std::min(tensor_problems.size(), kListedTensorProblems));
  if (tensor_problems.size() > kListedTensorProblems)
    problems.push_back(
        str("and ", tensor_problems.size() - kListedTensorProblems, " more tensor differences"));
  for (const auto& [key, expected] : expected_texts) {
    const auto found = checkpoint_texts.find(key);
    if (found == checkpoint_texts.end()) {
      problems.push_back(str("'", key, "' is missing from the checkpoint"));
    } else if (found->second != expected) {
      problems.push_back(text_difference(key, found->second, expected));
    }
  }
  if (problems.empty()) return;
  std::string message = "the checkpoint does not fit this model: ";
  for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
  throw Error(message);
}

}  // namespace sonata
