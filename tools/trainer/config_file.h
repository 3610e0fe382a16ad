#pragma once
// Config files for CLI11 apps in JSON or YAML, holding the same keys as the long options
// ("batch-size": 32, or batch_size: 32; a list for a repeatable option; true/false for a
// flag). YAML is read as one flat mapping of scalars and lists (block "- item" or flow
// "[a, b]"), which is what a trainer config is; nesting is refused with the line named.
// The format is told by the first character: '{' is JSON, anything else YAML.
#include <CLI/CLI.hpp>

#include <istream>
#include <string>
#include <vector>

namespace sonata {

class JsonYamlConfig : public CLI::Config {
 public:
  // Writing configs is not needed: --help lists every option.
  std::string to_config(const CLI::App*, bool, bool, std::string) const override { return {}; }
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;
};

// The parsers behind from_config, on text; `source` names it in errors.
std::vector<CLI::ConfigItem> parse_json_config(const std::string& text, const std::string& source);
std::vector<CLI::ConfigItem> parse_yaml_config(const std::string& text, const std::string& source);

}  // namespace sonata
