#include "tests/support/text_fixture.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sonata::testing {

TextFixture read_text_fixture(const std::string& path) {
  std::ifstream file(path);
  INFO(path);
  REQUIRE(file.good());
  TextFixture fixture;
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream words(line);
    std::string key, word;
    words >> key;
    while (words >> word) fixture[key].push_back(word);
  }
  return fixture;
}

std::vector<double> fixture_doubles(const TextFixture& fixture, const std::string& key) {
  std::vector<double> out;
  for (const std::string& word : fixture.at(key)) out.push_back(std::strtod(word.c_str(), nullptr));
  return out;
}

}  // namespace sonata::testing
