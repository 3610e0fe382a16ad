#pragma once
// Config files for CLI11 apps in JSON or YAML, holding the same keys as the long options
// ("batch-size": 32, or batch_size: 32; a list for a repeatable option; true/false for a
// flag). YAML is read as one flat mapping of scalars and lists (block "- item" or flow
// "[a, b]"), which is what a trainer config is; nesting is refused with the line named.
// The format is told by the first character: '{' is JSON, anything else YAML. A key that
// names no option of the app, and a key given twice (batch_size and batch-size are the same
// key), are refused naming the key, the file and the line.
// Refused too, so that nothing is silently read otherwise than written, naming the file, the
// line and the key: what this reader does not support of YAML (a second document after
// "---", anchors "&a", aliases "*a", merge keys "<<", tags "!!", block scalars "|" ">"), a
// list for an option that takes one value ("lr: [1, 2]"), and a value that is not of the
// option's type ("batch-size: 8.5" for an integer, "lr: fast" for a number).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace sonata {

class JsonYamlConfig : public CLI::Config {
 public:
  // `app`: the app reading the file through its set_config option, whose options the keys
  // must name (it outlives this formatter, which it owns).
  explicit JsonYamlConfig(const CLI::App* app) : app_(app) {}
  // Writing configs is not needed: --help lists every option.
  std::string to_config(const CLI::App*, bool, bool, std::string) const override { return {}; }
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;

 private:
  const CLI::App* app_;
};

// One key of a config file: as written, its line (YAML; 0 in JSON), and the item for CLI11
// (the option's name: underscores read as dashes).
struct ConfigKey {
  std::string written;
  int64_t line = 0;
  CLI::ConfigItem item;
  bool list = false;  // written as a list (block, flow or JSON array), of any length
};

// The parsers behind from_config, on text; `source` names it in errors.
std::vector<ConfigKey> parse_json_config(const std::string& text, const std::string& source);
std::vector<ConfigKey> parse_yaml_config(const std::string& text, const std::string& source);

}  // namespace sonata
