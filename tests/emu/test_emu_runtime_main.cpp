// The emulated runtime's self-tests (emu/runtime): Catch2's session, with the emulator's
// default of 8 devices whatever the environment asks (the tests use devices 0..7).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>

int main(int argc, char** argv) {
  setenv("SONATA_EMU_DEVICES", "8", 1);
  return Catch::Session().run(argc, argv);
}
