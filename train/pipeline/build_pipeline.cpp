#include "train/pipeline/build_pipeline.h"

#include <sstream>

#include "base/error.h"
#include "engine/deferred_init.h"

namespace sonata {
namespace {

// --pipeline-cuts "7,12": the first layers of stages 1..S-1.
std::vector<size_t> parse_cuts(const std::string& text) {
  std::vector<size_t> cuts;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    SONATA_CHECK(used > 0 && used == item.size() && value > 0,
                 "--pipeline-cuts must list positive layer indices separated by commas, got '",
                 text, "'");
    cuts.push_back(size_t(value));
  }
  return cuts;
}

// Where `layers` are cut into `options.stages` stages, and on what basis.
StagePlan plan_stages(ProcessGroup& world, LayerSequence layers,
                      const PipelineBuildOptions& options, std::string* basis) {
  const int stages = options.stages;
  SONATA_CHECK(layers.size() >= size_t(stages), "--pipeline-stages ", stages,
               ": the model has only ", layers.size(), " layers to cut into stages");
  if (!options.cuts.empty()) {
    const std::vector<size_t> cuts = parse_cuts(options.cuts);
    SONATA_CHECK(cuts.size() + 1 == size_t(stages), "--pipeline-cuts '", options.cuts, "' makes ",
                 cuts.size() + 1, " stages, not the ", stages, " of --pipeline-stages");
    *basis = "at --pipeline-cuts";
    StagePlan plan;
    plan.ranges = partition_at(layers.size(), cuts);
    plan.layers = std::move(layers);
    return plan;
  }
  if (options.balance == PipelineBalance::time) {
    // One rank measures (timings differ between ranks) and every rank cuts by its figures. A
    // model built deferred is made one layer at a time for its timing (partition.h).
    std::vector<double> costs(layers.size(), 0.0);
    if (world.rank() == 0) costs = measure_layer_times(layers, options.timing_input());
    *basis = "by measured time";
    return partition_with_row_pieces(layers, broadcast_costs(world, costs), stages);
  }
  *basis = "by parameter bytes";
  return partition_with_row_pieces(layers, layer_parameter_bytes(layers), stages);
}

}  // namespace

BuiltPipeline build_pipeline(std::shared_ptr<ProcessGroup> world, LayerSequence layers,
                             const PipelineBuildOptions& options, PipelineLoss loss) {
  BuiltPipeline built;
  built.stages = options.stages;
  const int world_size = world->world_size();
  SONATA_CHECK(built.stages >= 1 && world_size % built.stages == 0, "--pipeline-stages ",
               built.stages, " needs a multiple of ", built.stages,
               " processes (one per stage, times the data-parallel replicas); this run has ",
               world_size);
  built.replicas = world_size / built.stages;
  built.replica = world->rank() / built.stages;
  built.stage_index = world->rank() % built.stages;
  built.stage_group = world->split(built.replica, built.stage_index);
  if (built.replicas > 1) built.replica_group = world->split(built.stage_index, built.replica);

  StagePlan plan = plan_stages(*world, std::move(layers), options, &built.basis);
  built.plan_text = stage_plan_str(plan);
  built.stage =
      std::make_shared<PipelineStage>(std::move(plan.layers), plan.ranges, built.stage_index);
  // The other stages' tensors are copies no one here reads (or, built deferred, never made).
  built.stage->release_other_stages();
  std::vector<Tensor> own;
  for (const auto& [name, tensor] : built.stage->state_dict()) own.push_back(tensor);
  materialise(own);

  built.pipeline =
      std::make_unique<Pipeline>(built.stage_group, built.stage, std::move(loss), options.pipeline);
  if (built.replica_group)
    built.reducer = std::make_unique<Reducer>(built.stage->named_parameters(), built.replica_group,
                                              options.reducer);
  return built;
}

}  // namespace sonata
