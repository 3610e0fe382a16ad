// The emulated runtime's self-tests (emu/runtime): Catch2's session, with the emulator's
// default of 8 devices whatever the environment asks (the tests use devices 0..7).
#include <cstdlib>

#include "tests/support/catch_runner.h"

int main(int argc, char** argv) {
  setenv("SONATA_EMU_DEVICES", "8", 1);
  return sonata::testing::run_catch_session(argc, argv);
}
