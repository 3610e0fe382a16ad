#pragma once
// The trainer's modes and their words, each written once: the option table's rows
// (option_table.cpp) read the words into these enums (option_choice.h), --help and the
// refusals list them, and the checkpoint's JSON keeps them (today's words, so that old
// checkpoints and config files load).
#include <span>

#include "base/math_mode.h"
#include "comm/pipeline/schedule.h"
#include "data/features/image_features.h"
#include "engine/optim/lr_schedule.h"
#include "train/option_choice.h"

namespace sonata {

enum class Precision { fp32, fp16, bf16 };                    // --precision
enum class FeaturesOn { load, step };                         // --features-on
enum class OptimizerKind { sgd, adam, adamw };                // --optimizer
enum class ScheduleShape { constant, cosine, step, linear };  // --schedule
enum class ScheduleUnit { epochs, steps };                    // --schedule-unit
enum class BadInput { stop, skip };                           // --bad-input
enum class CommDtype { same, fp16, bf16 };                    // --ddp-comm-dtype
// --pipeline-balance (and bench_parallel --balance): by parameter bytes, or by each layer's
// measured forward and backward time.
enum class PipelineBalance { bytes, time };
// --progress; off is no word of the user's: a rank that does not speak for the run.
enum class ProgressMode { automatic, bar, lines, none, off };
// The lower floors' own enums, read from the trainer's words here: --tf32 (Tf32Mode,
// base/math_mode.h), --lr-scaling (LrScalingRule, engine/optim/lr_schedule.h),
// --pipeline-schedule (PipelineSchedule, comm/pipeline/schedule.h). --features' words
// (ImageFeatures) sit in data/features/image_features.h, where a checkpoint's reader
// (tools/inference) finds them too.

SONATA_SPELLINGS(Precision, {Precision::fp32, "fp32"}, {Precision::fp16, "fp16"},
                 {Precision::bf16, "bf16"})
SONATA_SPELLINGS(FeaturesOn, {FeaturesOn::load, "load"}, {FeaturesOn::step, "step"})
SONATA_SPELLINGS(OptimizerKind, {OptimizerKind::sgd, "sgd"}, {OptimizerKind::adam, "adam"},
                 {OptimizerKind::adamw, "adamw"})
SONATA_SPELLINGS(ScheduleShape, {ScheduleShape::constant, "constant"},
                 {ScheduleShape::cosine, "cosine"}, {ScheduleShape::step, "step"},
                 {ScheduleShape::linear, "linear"})
SONATA_SPELLINGS(ScheduleUnit, {ScheduleUnit::epochs, "epochs"}, {ScheduleUnit::steps, "steps"})
SONATA_SPELLINGS(BadInput, {BadInput::stop, "stop"}, {BadInput::skip, "skip"})
SONATA_SPELLINGS(CommDtype, {CommDtype::same, "same"}, {CommDtype::fp16, "fp16"},
                 {CommDtype::bf16, "bf16"})
SONATA_SPELLINGS(PipelineBalance, {PipelineBalance::bytes, "bytes"},
                 {PipelineBalance::time, "time"})
SONATA_SPELLINGS(ProgressMode, {ProgressMode::automatic, "auto"}, {ProgressMode::bar, "bar"},
                 {ProgressMode::lines, "lines"}, {ProgressMode::none, "none"})
SONATA_SPELLINGS(Tf32Mode, {Tf32Mode::off, "off"}, {Tf32Mode::conv, "conv"}, {Tf32Mode::all, "all"})
SONATA_SPELLINGS(LrScalingRule, {LrScalingRule::none, "none"}, {LrScalingRule::linear, "linear"},
                 {LrScalingRule::sqrt, "sqrt"})
SONATA_SPELLINGS(PipelineSchedule, {PipelineSchedule::one_f_one_b, "1f1b"},
                 {PipelineSchedule::gpipe, "gpipe"})

}  // namespace sonata
