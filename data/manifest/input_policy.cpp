#include "data/manifest/input_policy.h"

#include <algorithm>
#include <new>

#include "base/error.h"
#include "base/parallel_for.h"

namespace sonata {

std::vector<std::string> load_inputs(int64_t count, int64_t workers, const InputPolicy& policy,
                                     const std::function<std::string(int64_t)>& path_of,
                                     const std::function<void(int64_t)>& load) {
  std::vector<std::string> problems(static_cast<size_t>(count));
  parallel_for(count, workers, [&](int64_t i) {
    std::string problem;
    try {
      load(i);
      return;
    } catch (const Error& error) {
      problem = error.what();
    } catch (const std::bad_alloc&) {
      problem = "out of memory reading it";
    }
    const std::string path = path_of(i);
    if (problem.find(path) == std::string::npos) problem = str(path, ": ", problem);
    if (!policy.skip_bad) throw Error(problem);
    problems[size_t(i)] = problem;
  });
  return problems;
}

ManifestOptions manifest_options(const InputPolicy& policy) {
  ManifestOptions options;
  options.check_files = !policy.skip_bad;
  return options;
}

bool over_max_duration(double seconds, const InputPolicy& policy) {
  return policy.max_duration > 0 && seconds > policy.max_duration;
}

std::string describe_too_long(const std::vector<TooLong>& clips, const InputPolicy& policy) {
  if (clips.empty()) return {};
  const TooLong& longest =
      *std::max_element(clips.begin(), clips.end(),
                        [](const TooLong& a, const TooLong& b) { return a.seconds < b.seconds; });
  return str(clips.size(), clips.size() == 1 ? " clip" : " clips", " longer than --max-duration ",
             policy.max_duration, " s skipped; the longest: ", longest.path, " (", longest.seconds,
             " s)");
}

std::vector<size_t> good_inputs(const std::vector<std::string>& problems) {
  std::vector<size_t> good;
  for (size_t i = 0; i < problems.size(); ++i)
    if (problems[i].empty()) good.push_back(i);
  return good;
}

std::vector<std::string> bad_inputs(const std::vector<std::string>& problems) {
  std::vector<std::string> bad;
  for (const std::string& problem : problems)
    if (!problem.empty()) bad.push_back(problem);
  return bad;
}

}  // namespace sonata
