#include "train/setup/optimizer_choice.h"

#include "base/error.h"
#include "engine/optim/adamw.h"
#include "engine/optim/param_groups.h"
#include "engine/optim/sgd.h"

namespace sonata {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& o, Module& model, double lr,
                                          StateOwnership& ownership) {
  std::vector<ParamGroup> groups =
      o.decay_norm_and_bias ? std::vector<ParamGroup>{ParamGroup{
                                  model.parameters(), {{"weight_decay", o.weight_decay}}}}
                            : weight_decay_groups(model, o.weight_decay);
  groups = ownership.optimizer_groups(std::move(groups));
  if (o.optimizer == OptimizerKind::sgd)
    return std::make_unique<SGD>(std::move(groups), SgdOptions{.lr = lr,
                                                               .momentum = o.momentum,
                                                               .weight_decay = o.weight_decay,
                                                               .nesterov = o.nesterov});
  const AdamOptions adam{
      .lr = lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.weight_decay};
  if (o.optimizer == OptimizerKind::adam) return std::make_unique<Adam>(std::move(groups), adam);
  return std::make_unique<AdamW>(std::move(groups), adam);
}

LrSchedule make_schedule(const OptimizerOptions& o, double peak_lr, double length) {
  LrSchedule schedule(peak_lr);
  if (o.warmup > 0) schedule.warmup(o.warmup, o.warmup_start_lr);
  const double main = length - o.warmup - o.flat_tail;
  SONATA_CHECK(main > 0, "--warmup ", o.warmup, " and --flat-tail ", o.flat_tail,
               " leave nothing of the ", length, " ", o.schedule_unit,
               " of training: shorten them to fit (e.g. --warmup ", length / 10,
               " --flat-tail 0, a tenth of the run warming up) or train longer");
  if (o.schedule == ScheduleShape::cosine) schedule.cosine(main, o.min_lr);
  if (o.schedule == ScheduleShape::linear) schedule.linear(main, o.min_lr);
  if (o.schedule == ScheduleShape::step) schedule.step_decay(main, o.step_every, o.step_gamma);
  if (o.schedule == ScheduleShape::constant) schedule.constant(main);
  if (o.flat_tail > 0) schedule.constant(o.flat_tail);
  return schedule;
}

}  // namespace sonata
