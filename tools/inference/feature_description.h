#pragma once
// The FeatureConfig a describe() text stands for (data/features/feature_config.h). A trainer
// checkpoint keeps its features only as that text (under "features" in the saved options), so
// a model used later computes exactly the features it was trained on.
#include <string_view>

#include "data/features/feature_config.h"

namespace sonata {

// Parses "sonata-features/1 sample_rate=16000 n_fft=400 ...". Throws sonata::Error naming
// the text's first missing, unknown or malformed field, or another format version.
// describe(parse_feature_description(describe(c))) == describe(c) for every valid c.
FeatureConfig parse_feature_description(std::string_view text);

}  // namespace sonata
