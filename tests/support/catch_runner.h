#pragma once
// Catch2's session (tests/support/catch_runner.cpp holds its implementation, compiled once per
// build): a test executable's own main calls this after its setup. Catch2 v2 declares
// Catch::Session only where its implementation is compiled, hence this door.
namespace sonata::testing {
int run_catch_session(int argc, char** argv);
}
