#include "train/config_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <map>
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

// The option a config key sets, found as CLI11 finds it ("--name", "-n", then the name).
const CLI::Option* option_of(const CLI::App& app, const std::string& name) {
  if (const CLI::Option* option = app.get_option_no_throw("--" + name)) return option;
  if (name.size() == 1)
    if (const CLI::Option* option = app.get_option_no_throw("-" + name)) return option;
  return app.get_option_no_throw(name);
}

bool names_option(const CLI::App& app, const std::string& name) {
  return option_of(app, name) != nullptr;
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

// YAML this reader does not support, which a YAML library would read otherwise than as the
// text it is here: an anchor, an alias, a tag, a block scalar.
const char* unsupported_yaml(const std::string& value) {
  if (value.empty()) return nullptr;
  switch (value.front()) {
    case '&':
      return "a YAML anchor ('&')";
    case '*':
      return "a YAML alias ('*')";
    case '!':
      return "a YAML tag ('!')";
    case '|':
    case '>':
      return "a YAML block scalar ('|' or '>')";
    default:
      return nullptr;
  }
}

// Whether `text` is all of one number of the kind CLI11 converts to (its type names: INT,
// UINT, FLOAT).
bool is_number_of(const std::string& type, const std::string& text) {
  if (text.empty()) return false;
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  if (type == "INT") {
    (void)std::strtoll(begin, &end, 0);
  } else if (type == "UINT") {
    if (text.front() == '-') return false;
    (void)std::strtoull(begin, &end, 0);
  } else {
    (void)std::strtod(begin, &end);
  }
  return errno == 0 && end == begin + text.size() &&
         !std::isspace(static_cast<unsigned char>(text.front()));
}

// A key's line in JSON text (the first `"key":`), 0 when not found: for the errors.
int64_t json_key_line(const std::string& text, const std::string& key) {
  const std::string quoted = nlohmann::json(key).dump();
  for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1)) {
    const size_t next = text.find_first_not_of(" \t\r\n", at + quoted.size());
    if (next != std::string::npos && text[next] == ':')
      return 1 + std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n');
  }
  return 0;
}

// Refuses a key whose values the option cannot take as written: a list for an option of one
// value, or a value not of its type. CLI11 would say "Could not convert" or keep one item,
// without the file or the line.
void check_values(const CLI::Option& option, const ConfigKey& key, const std::string& where) {
  const int most = option.get_items_expected_max();
  SONATA_CHECK(!key.list || most > 1, where, ": key '", key.written, "' takes one value, got ",
               key.item.inputs.size() == 1 ? std::string("a list of one")
                                           : str("a list of ", key.item.inputs.size()),
               "; write it as one value, e.g. ", key.written, ": ",
               key.item.inputs.empty() ? std::string("...") : key.item.inputs.front());
  // The type name without its validators' descriptions ("INT:POSITIVE").
  const std::string full = option.get_type_name();
  const std::string type = full.substr(0, full.find(':'));
  if (type != "INT" && type != "UINT" && type != "FLOAT") return;
  const char* kind = type == "INT"    ? "an integer"
                     : type == "UINT" ? "a non-negative integer"
                                      : "a number";
  // An option with a delimiter (--image-mean 0.4,0.5) splits each value, as CLI11 does.
  const char delimiter = option.get_delimiter();
  for (const std::string& input : key.item.inputs) {
    std::stringstream parts(input);
    for (std::string value; std::getline(parts, value, delimiter ? delimiter : '\0');)
      SONATA_CHECK(is_number_of(type, trim(value)), where, ": key '", key.written, "' must be ",
                   kind, ", got '", input, "'");
  }
}

}  // namespace

std::vector<CLI::ConfigItem> JsonYamlConfig::from_config(std::istream& input) const {
  std::string text{std::istreambuf_iterator<char>(input), std::istreambuf_iterator<char>()};
  // A UTF-8 byte-order mark (Windows editors write one) is no part of the first key: YAML
  // allows it, and the JSON it starts is JSON all the same.
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);
  const auto first = text.find_first_not_of(" \t\r\n");
  const bool json = first != std::string::npos && text[first] == '{';
  // CLI11 hands over a stream; the file it opened is the --config option's value.
  const CLI::Option* option = app_->get_config_ptr();
  const std::string file =
      option != nullptr && !option->results().empty() ? option->results().back() : "";
  const std::string source =
      str("config file ", file.empty() ? "" : "'" + file + "' ", json ? "(JSON)" : "(YAML)");
  try {
    const std::vector<ConfigKey> keys =
        json ? parse_json_config(text, source) : parse_yaml_config(text, source);
    std::vector<CLI::ConfigItem> items;
    for (const ConfigKey& key : keys) {
      const std::string where = source + (key.line > 0 ? str(" line ", key.line) : std::string());
      // Checked here because CLI11's own error says "INI was not able to parse" and no file.
      SONATA_CHECK(names_option(*app_, key.item.name), where, ": unknown key '", key.written,
                   "': there is no option --", key.item.name, " (--help lists them)");
      check_values(*option_of(*app_, key.item.name), key, where);
      items.push_back(key.item);
    }
    return items;
  } catch (const Error& error) {
    // CLI11 reports this as a usage error with its own exit code.
    throw CLI::ConversionError(error.what());
  }
}

std::vector<ConfigKey> parse_json_config(const std::string& text, const std::string& source) {
  // nlohmann keeps one value of a repeated key; the parse callback sees every top-level key.
  std::map<std::string, std::string> seen;  // option name -> the key as written
  auto refuse_repeats = [&](int depth, nlohmann::json::parse_event_t event,
                            nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1) {
      const std::string key = parsed.get<std::string>();
      const auto [earlier, fresh] = seen.emplace(option_name(key), key);
      SONATA_CHECK(
          fresh, source, ": key '", key, "' is given twice",
          earlier->second == key ? std::string() : str(" (also as '", earlier->second, "')"),
          "; keep one");
    }
    return true;
  };
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text, refuse_repeats);
  } catch (const nlohmann::json::exception& error) {
    throw Error(str(source, ": not valid JSON (", error.what(), ")"));
  }
  SONATA_CHECK(root.is_object(), source, ": expected one JSON object of option names, got ",
               root.type_name());
  std::vector<ConfigKey> keys;
  for (const auto& [key, value] : root.items()) {
    std::vector<std::string> inputs;
    const int64_t line = json_key_line(text, key);
    const std::string where = source + (line > 0 ? str(" line ", line) : std::string());
    if (value.is_array()) {
      for (const auto& element : value) inputs.push_back(json_scalar(element, key, where));
    } else {
      SONATA_CHECK(!value.is_object(), where, ": key '", key,
                   "' holds an object; the config is one flat object of option names");
      inputs.push_back(json_scalar(value, key, where));
    }
    keys.push_back({key, line, item(key, std::move(inputs)), value.is_array()});
  }
  return keys;
}

std::vector<ConfigKey> parse_yaml_config(const std::string& text, const std::string& source) {
  std::vector<ConfigKey> keys;
  std::map<std::string, size_t> seen;  // option name -> its entry in keys
  std::stringstream lines(text);
  std::string raw;
  int64_t number = 0;
  bool open_list = false;    // the last key had no value: "- item" lines follow
  int64_t document_end = 0;  // the line of a "..." that ended the document
  while (std::getline(lines, raw)) {
    ++number;
    const std::string where = source + " line " + std::to_string(number);
    const std::string line = strip_comment(raw);
    const std::string content = trim(line);
    if (content.empty()) continue;
    // One document: a "---" may open it, before any key; a second one is refused (a YAML
    // library reads only the first document, or fails), as is anything after a "...".
    SONATA_CHECK(document_end == 0, where, ": key '", trim(content.substr(0, content.find(':'))),
                 "' after the end of the document ('...' on line ", document_end,
                 "); a config file holds one YAML document");
    if (content == "---" || content.rfind("--- ", 0) == 0) {
      SONATA_CHECK(keys.empty() && content == "---", where,
                   keys.empty() ? str(": '", content,
                                      "': content on the document start line is not supported")
                                : str(": a second YAML document ('---') after key '",
                                      keys.back().written, "' (line ", keys.back().line,
                                      "); a config file holds one document: remove "
                                      "the '---' and keep each key once"));
      continue;
    }
    if (content == "...") {
      document_end = number;
      continue;
    }
    if (content.rfind("- ", 0) == 0 || content == "-") {
      SONATA_CHECK(open_list, where, ": a list item without a key above it");
      const std::string element = trim(content.substr(1));
      const char* unsupported = unsupported_yaml(element);
      SONATA_CHECK(unsupported == nullptr, where, ": key '", keys.back().written,
                   "': ", unsupported ? unsupported : "",
                   " is not supported; write the value itself");
      SONATA_CHECK(element.empty() || (element.front() != '[' && element.front() != '{' &&
                                       element.rfind("- ", 0) != 0),
                   where, ": key '", keys.back().written,
                   "': a nested list or mapping is not supported; list plain values");
      keys.back().item.inputs.push_back(unquote(element, where));
      continue;
    }
    SONATA_CHECK(line.find_first_not_of(" \t") == 0, where,
                 ": nested mappings are not supported; write every option at the top level");
    const auto colon = content.find(':');
    SONATA_CHECK(colon != std::string::npos && colon > 0, where, ": expected 'key: value', got '",
                 content, "'");
    const std::string key = trim(content.substr(0, colon));
    const std::string value = trim(content.substr(colon + 1));
    const char* unsupported = key == "<<" ? "a YAML merge key ('<<')" : unsupported_yaml(key);
    if (unsupported == nullptr && key.front() == '?') unsupported = "a YAML complex key ('?')";
    SONATA_CHECK(unsupported == nullptr, where, ": key '", key,
                 "': ", unsupported ? unsupported : "",
                 " is not supported; write every option as 'key: value'");
    unsupported = unsupported_yaml(value);
    SONATA_CHECK(unsupported == nullptr, where, ": key '", key,
                 "': ", unsupported ? unsupported : "",
                 " is not supported; write the value itself");
    // YAML readers differ on a repeated key (PyYAML keeps the last, CLI11 the first): refuse.
    const auto [earlier, fresh] = seen.emplace(option_name(key), keys.size());
    SONATA_CHECK(fresh, where, ": key '", key, "' is given twice (first on line ",
                 keys[earlier->second].line, "); keep one");
    open_list = value.empty();
    if (open_list) {
      keys.push_back({key, number, item(key, {}), true});
    } else if (value.front() == '[') {
      std::vector<std::string> elements = flow_list(value, where);
      for (const std::string& element : elements) {
        const char* inner = unsupported_yaml(element);
        SONATA_CHECK(inner == nullptr &&
                         (element.empty() || (element.front() != '[' && element.front() != '{')),
                     where, ": key '", key, "': ", inner ? inner : "a nested list or mapping",
                     " in a list is not supported; list plain values");
      }
      keys.push_back({key, number, item(key, std::move(elements)), true});
    } else {
      SONATA_CHECK(value.front() != '{', where, ": key '", key,
                   "' holds a mapping; the config is one flat mapping of option names");
      keys.push_back({key, number, item(key, {unquote(value, where)})});
    }
  }
  for (const ConfigKey& entry : keys)
    SONATA_CHECK(!entry.item.inputs.empty(), source, " line ", entry.line, ": key '", entry.written,
                 "' has no value");
  return keys;
}

}  // namespace sonata
