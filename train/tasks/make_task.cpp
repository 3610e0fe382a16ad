#include "train/tasks/make_task.h"

#include "base/error.h"
#include "train/tasks/class_task.h"
#include "train/tasks/speech_task.h"
#include "train/trainer_options.h"

namespace sonata {

std::unique_ptr<Task> make_task(const TrainerOptions& options) {
  switch (options.family()) {
    case ModelFamily::speech:
      return std::make_unique<SpeechTask>(
          SpeechTaskOptions(options),
          options.vocabulary.empty() ? Vocabulary() : Vocabulary::load(options.vocabulary));
    case ModelFamily::image_classifier:
      return std::make_unique<ClassTask>(ClassTaskOptions(options));
  }
  throw Error(str("--model ", options.model, ": no task for its family"));
}

}  // namespace sonata
