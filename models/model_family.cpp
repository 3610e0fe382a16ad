#include "models/model_family.h"

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

}  // namespace sonata
