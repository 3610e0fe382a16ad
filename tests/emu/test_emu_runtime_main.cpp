// The emulated runtime's self-tests (emu/runtime): Catch2's main.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
