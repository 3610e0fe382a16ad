#pragma once
// The trainer's modes and their words, each written once: the option table's rows
// (option_table.cpp) read the words into these enums (option_choice.h), --help and the
// refusals list them, and the checkpoint's JSON keeps them (today's words, so that old
// checkpoints and config files load).
#include <span>

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
enum class ImageFeatures { mel, cqt };  // --features (classification)

#define SONATA_SPELLINGS(Mode, ...)                           \
  template <>                                                 \
  inline std::span<const Spelling<Mode>> spellings<Mode>() {  \
    static constexpr Spelling<Mode> kWords[] = {__VA_ARGS__}; \
    return kWords;                                            \
  }

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
SONATA_SPELLINGS(ImageFeatures, {ImageFeatures::mel, "mel"}, {ImageFeatures::cqt, "cqt"})

#undef SONATA_SPELLINGS

}  // namespace sonata
