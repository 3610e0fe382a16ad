#include "base/range_report.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/nvtx.h"

namespace sonata {

void write_range_times(const std::string& path, double wall_s) {
  const std::vector<RangeTime> times = range_times();
  // Self times add up to the time spent inside some range, once per thread: with worker
  // threads timed too, timed_s can exceed wall_s.
  double timed_s = 0;
  for (const RangeTime& t : times) timed_s += t.self_s;
  std::ofstream out(path);
  SONATA_CHECK(out.good(), "--range-times: cannot write ", path);
  out << nlohmann::ordered_json{{"event", "range_times"}, {"wall_s", wall_s}, {"timed_s", timed_s}}
             .dump()
      << "\n";
  for (const RangeTime& t : times)
    out << nlohmann::ordered_json{{"name", t.name},
                                  {"calls", t.calls},
                                  {"inclusive_s", t.inclusive_s},
                                  {"self_s", t.self_s},
                                  {"self_share", wall_s > 0 ? t.self_s / wall_s : 0.0}}
               .dump()
        << "\n";
  SONATA_CHECK(out.good(), "--range-times: writing ", path, " failed");
}

}  // namespace sonata
