// The main of a test executable that needs nothing before Catch2's session.
#include "tests/support/catch_runner.h"

int main(int argc, char** argv) {
  return sonata::testing::run_catch_session(argc, argv);
}
