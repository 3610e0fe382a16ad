#pragma once
// The names an optimizer's state goes under (engine/optim/optimizer.h OptimizerState):
// per-parameter entries are "state.<i>.<what>", i the parameter's index across the groups,
// which a pipeline stage renumbers between its own optimizer and one process's.
#include <cstdint>
#include <string>

namespace sonata {

// The parameter index a state entry "state.<i>.<what>" belongs to, or -1 for other names.
int64_t optimizer_state_index(const std::string& name);
// "state.<i>.<what>" as "state.<index>.<what>".
std::string renumbered_optimizer_state(const std::string& name, int64_t index);

}  // namespace sonata
