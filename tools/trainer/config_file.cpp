#include "tools/trainer/config_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>
#include <sstream>

#include "base/error.h"

namespace sonata {
namespace {

// Option names use dashes; config files often use underscores.
std::string option_name(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

CLI::ConfigItem item(const std::string& key, std::vector<std::string> inputs) {
  CLI::ConfigItem result;
  result.name = option_name(key);
  result.inputs = std::move(inputs);
  return result;
}

std::string json_scalar(const nlohmann::json& value, const std::string& key,
                        const std::string& source) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number_unsigned()) return std::to_string(value.get<uint64_t>());
  if (value.is_number_float()) {
    std::ostringstream text;
    text.precision(17);
    text << value.get<double>();
    return text.str();
  }
  throw Error(str(source, ": key '", key, "' must be a string, number or boolean, got ",
                  value.type_name()));
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return std::string(text.substr(first, last - first + 1));
}

// A '#' starts a comment unless it sits inside quotes.
std::string strip_comment(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return line.substr(0, i);
    }
  }
  return line;
}

std::string unquote(const std::string& value, const std::string& where) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')) {
    SONATA_CHECK(value.back() == value.front(), where, ": unterminated quoted value ", value);
    return value.substr(1, value.size() - 2);
  }
  return value;
}

std::vector<std::string> flow_list(const std::string& value, const std::string& where) {
  SONATA_CHECK(value.back() == ']', where, ": a list must end with ']', got ", value);
  std::vector<std::string> items;
  std::string inner = value.substr(1, value.size() - 2);
  std::stringstream stream(inner);
  std::string part;
  while (std::getline(stream, part, ',')) {
    const std::string element = trim(part);
    if (!element.empty()) items.push_back(unquote(element, where));
  }
  return items;
}

}  // namespace

std::vector<CLI::ConfigItem> JsonYamlConfig::from_config(std::istream& input) const {
  const std::string text{std::istreambuf_iterator<char>(input), std::istreambuf_iterator<char>()};
  const auto first = text.find_first_not_of(" \t\r\n");
  try {
    if (first != std::string::npos && text[first] == '{')
      return parse_json_config(text, "config file (JSON)");
    return parse_yaml_config(text, "config file (YAML)");
  } catch (const Error& error) {
    // CLI11 reports this as a usage error with its own exit code.
    throw CLI::ConversionError(error.what());
  }
}

std::vector<CLI::ConfigItem> parse_json_config(const std::string& text, const std::string& source) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw Error(str(source, ": not valid JSON (", error.what(), ")"));
  }
  SONATA_CHECK(root.is_object(), source, ": expected one JSON object of option names, got ",
               root.type_name());
  std::vector<CLI::ConfigItem> items;
  for (const auto& [key, value] : root.items()) {
    std::vector<std::string> inputs;
    if (value.is_array()) {
      for (const auto& element : value) inputs.push_back(json_scalar(element, key, source));
    } else {
      SONATA_CHECK(!value.is_object(), source, ": key '", key,
                   "' holds an object; the config is one flat object of option names");
      inputs.push_back(json_scalar(value, key, source));
    }
    items.push_back(item(key, std::move(inputs)));
  }
  return items;
}

std::vector<CLI::ConfigItem> parse_yaml_config(const std::string& text, const std::string& source) {
  std::vector<CLI::ConfigItem> items;
  std::stringstream lines(text);
  std::string raw;
  int64_t number = 0;
  bool open_list = false;  // the last key had no value: "- item" lines follow
  while (std::getline(lines, raw)) {
    ++number;
    const std::string where = source + " line " + std::to_string(number);
    const std::string line = strip_comment(raw);
    const std::string content = trim(line);
    if (content.empty() || content == "---") continue;
    if (content.rfind("- ", 0) == 0 || content == "-") {
      SONATA_CHECK(open_list, where, ": a list item without a key above it");
      items.back().inputs.push_back(unquote(trim(content.substr(1)), where));
      continue;
    }
    SONATA_CHECK(line.find_first_not_of(" \t") == 0, where,
                 ": nested mappings are not supported; write every option at the top level");
    const auto colon = content.find(':');
    SONATA_CHECK(colon != std::string::npos && colon > 0, where, ": expected 'key: value', got '",
                 content, "'");
    const std::string key = trim(content.substr(0, colon));
    const std::string value = trim(content.substr(colon + 1));
    open_list = value.empty();
    if (open_list) {
      items.push_back(item(key, {}));
    } else if (value.front() == '[') {
      items.push_back(item(key, flow_list(value, where)));
    } else {
      SONATA_CHECK(value.front() != '{', where, ": key '", key,
                   "' holds a mapping; the config is one flat mapping of option names");
      items.push_back(item(key, {unquote(value, where)}));
    }
  }
  for (const CLI::ConfigItem& entry : items)
    SONATA_CHECK(!entry.inputs.empty(), source, ": key '", entry.name, "' has no value");
  return items;
}

}  // namespace sonata
