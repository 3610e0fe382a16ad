#include "data/manifest/input_policy.h"

#include "base/error.h"
#include "base/parallel_for.h"

namespace sonata {

std::vector<std::string> load_inputs(int64_t count, int64_t workers, const InputPolicy& policy,
                                     const std::function<void(int64_t)>& load) {
  std::vector<std::string> problems(static_cast<size_t>(count));
  parallel_for(count, workers, [&](int64_t i) {
    try {
      load(i);
    } catch (const Error& error) {
      if (!policy.skip_bad) throw;
      problems[size_t(i)] = error.what();
    }
  });
  return problems;
}

ManifestOptions manifest_options(const InputPolicy& policy) {
  ManifestOptions options;
  options.check_files = !policy.skip_bad;
  return options;
}

void check_duration(const std::string& path, double seconds, const InputPolicy& policy) {
  SONATA_CHECK(policy.max_duration <= 0 || seconds <= policy.max_duration, path, " lasts ", seconds,
               " s, longer than --max-duration ", policy.max_duration);
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
