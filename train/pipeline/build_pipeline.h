#pragma once
// One rank's part of a pipelined world, built in one order by the trainer (PipelineParallel)
// and bench/bench_parallel.cpp alike: the groups, the plan (where the layer sequence is cut),
// this rank's stage, its tensors materialised, the pipeline, and the reducer over the
// replicas. The world is D = world / S replicas of an S-stage pipeline, rank r running stage
// r % S of replica r / S.
#include <functional>
#include <memory>
#include <string>

#include "comm/pipeline/partition.h"
#include "comm/pipeline/pipeline.h"
#include "comm/process_group.h"
#include "comm/reducer.h"
#include "train/option_modes.h"

namespace sonata {

struct PipelineBuildOptions {
  int stages = 2;  // S
  // The first layers of stages 1..S-1, "7,12" (the trainer's --pipeline-cuts); empty: the
  // stages balanced by `balance`, a layer larger than a stage's share cut into row pieces.
  std::string cuts;
  // bytes: by parameter bytes; time: by each layer's forward and backward time,
  // measured on world rank 0 alone over timing_input() and broadcast, so that every rank cuts
  // by the same figures.
  PipelineBalance balance = PipelineBalance::bytes;
  std::function<LayerValue()> timing_input;
  PipelineOptions pipeline;  // the schedule and micro-batches per step
  ReducerOptions reducer;    // D > 1: stage s's gradients averaged over the replicas
};

struct BuiltPipeline {
  int stages = 1, stage_index = 0, replicas = 1, replica = 0;
  std::shared_ptr<ProcessGroup> stage_group;    // this replica's stages
  std::shared_ptr<ProcessGroup> replica_group;  // stage s of every replica; null when D = 1
  std::string plan_text;  // stage_plan_str: "0-22 | 23-29; classifier.0 rows 0-1023 | ..."
  std::string basis;      // "by parameter bytes", "by measured time", "at --pipeline-cuts"
  std::shared_ptr<PipelineStage> stage;
  std::unique_ptr<Pipeline> pipeline;
  std::unique_ptr<Reducer> reducer;  // null when D = 1
};

// A collective over `world`, in order: the stage and replica groups; the plan of `layers`
// (the whole model's); this rank's stage; the other stages' tensors released (deferred again,
// engine/nn/release.h: their handles and shapes stay, their memory goes) and this stage's
// materialised, so that a model built deferred (engine/deferred_init.h) gets memory for this
// stage's tensors alone; the pipeline, `loss` running on its last stage; the reducer. Throws,
// naming --pipeline-stages or --pipeline-cuts, when S does not divide the world, the model has
// fewer layers than stages, or the cuts make another number of stages.
BuiltPipeline build_pipeline(std::shared_ptr<ProcessGroup> world, LayerSequence layers,
                             const PipelineBuildOptions& options, PipelineLoss loss);

}  // namespace sonata
