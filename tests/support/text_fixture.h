#pragma once
// The line format of the PyTorch fixtures written by tools/make_*_fixtures.py: each line is
// a key followed by whitespace-separated values.
#include <map>
#include <string>
#include <vector>

namespace sonata::testing {

using TextFixture = std::map<std::string, std::vector<std::string>>;

// Fails the running test if the file cannot be opened.
TextFixture read_text_fixture(const std::string& path);
// The values under `key` as doubles (strtod, since istream's >> rejects "inf" and "nan").
std::vector<double> fixture_doubles(const TextFixture& fixture, const std::string& key);

}  // namespace sonata::testing
