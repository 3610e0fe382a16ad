// The model registry's rows (models/registry.cpp): each names a model of a family whose
// interface its factory's module implements, and lists options its factory takes.
#include <catch2/catch.hpp>

#include <set>

#include "engine/deferred_init.h"
#include "models/model_family.h"
#include "models/registry.h"

using namespace sonata;
using Catch::Contains;

TEST_CASE("registry: every row builds a module of its family and takes the options it lists",
          "[models][registry]") {
  std::set<std::string> names;
  for (const ModelEntry& entry : model_registry()) {
    INFO(entry.name);
    CHECK(names.insert(entry.name).second);
    CHECK_FALSE(entry.help.empty());
    CHECK(entry.header.starts_with("models/"));
    CHECK(find_model(entry.name) == &entry);
    // Built deferred: nothing is allocated, whatever the model's size.
    std::shared_ptr<Module> model;
    {
      DeferredInitScope deferred(true);
      model = entry.factory(ModelConfig());
    }
    const auto* layered = dynamic_cast<LayeredModel*>(model.get());
    REQUIRE(layered);
    CHECK_FALSE(layered->layers().empty());
    if (entry.family == ModelFamily::speech)
      CHECK(dynamic_cast<SpeechModel*>(model.get()));
    else
      CHECK(dynamic_cast<ImageClassifier*>(model.get()));
    // An unknown key is refused naming every key the factory takes: the listed options and
    // the family's own are among them.
    const ModelConfig unknown(std::map<std::string, std::string>{{"no-such-option", "1"}});
    std::string refusal;
    try {
      entry.factory(unknown);
    } catch (const std::exception& error) {
      refusal = error.what();
    }
    CHECK_THAT(refusal, Contains("has no option --no-such-option"));
    for (const ModelOption& option : entry.options) {
      INFO(option.key);
      CHECK_FALSE(option.help.empty());
      CHECK_THAT(refusal, Contains("--" + option.key));
    }
    CHECK_THAT(refusal, Contains("--num-classes"));
    if (entry.family == ModelFamily::speech) CHECK_THAT(refusal, Contains("--num-mels"));
  }
  CHECK(names.count("ds2"));
  CHECK(names.count("vgg19_bn"));
  CHECK(names.count("vgg16_bn"));
  CHECK(model_names(ModelFamily::speech) == std::vector<std::string>{"ds2"});
  CHECK(model_names(ModelFamily::image_classifier) ==
        std::vector<std::string>{"vgg19_bn", "vgg16_bn"});
}

TEST_CASE("registry: a model asked for as another family is refused naming both",
          "[models][registry]") {
  const ModelConfig small(std::map<std::string, std::string>{{"width", "0.0625"}});
  CHECK(make_image_classifier("vgg16_bn", small));
  CHECK_THROWS_WITH(make_speech_model("vgg16_bn", small),
                    Contains("model vgg16_bn (image classifier) is not of the speech model family "
                             "(that is ds2)"));
  CHECK_THROWS_WITH(make_image_classifier("ds2", ModelConfig()),
                    Contains("is not of the image classifier family (that is vgg19_bn or "
                             "vgg16_bn)"));
  CHECK_THROWS_WITH(make_model("vgg11"), "unknown model 'vgg11' (known: ds2, vgg19_bn, vgg16_bn)");
  CHECK(find_model("vgg11") == nullptr);
  CHECK(name_list({"a"}) == "a");
  CHECK(name_list({"a", "b", "c"}) == "a, b or c");
}
