#pragma once
// The task of --model's family (models/model_family.h): SpeechTask for a speech model,
// ClassTask for an image classifier. The trainer asks the registry for the family, never the
// model's name, so a new model of an existing family needs nothing here.
#include <memory>

#include "train/task.h"

namespace sonata {

struct TrainerOptions;

// Loads the data `options` name and builds the model (speech: with --vocabulary's symbols,
// or the default vocabulary).
std::unique_ptr<Task> make_task(const TrainerOptions& options);

}  // namespace sonata
