#include "models/model_family.h"

#include "engine/ops.h"

namespace sonata {

const char* family_name(ModelFamily family) {
  switch (family) {
    case ModelFamily::speech:
      return "speech model";
    case ModelFamily::image_classifier:
      return "image classifier";
  }
  return "unknown";
}

Tensor speech_log_probabilities(const Tensor& logits) {
  const DType dtype = logits.dtype();
  return log_softmax(
      dtype == DType::f16 || dtype == DType::bf16 ? cast(logits, DType::f32) : logits, 2);
}

}  // namespace sonata
