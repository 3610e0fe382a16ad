# Catch2 (Debian's catch2 package, v2, one header) for every test executable, the emulator's
# self-tests under emu/ and the project's under tests/ alike:
#   sonata_catch_runner  Catch2's implementation, compiled once (link it and call
#                        sonata::testing::run_catch_session from an own main)
#   sonata_catch_main    the same with a plain main
find_package(Catch2 REQUIRED)
include(Catch)
add_library(sonata_catch_runner STATIC ${PROJECT_SOURCE_DIR}/tests/support/catch_runner.cpp)
target_link_libraries(sonata_catch_runner PUBLIC Catch2::Catch2)
target_include_directories(sonata_catch_runner PUBLIC ${PROJECT_SOURCE_DIR})
# GCC 12 reports a false -Wmaybe-uninitialized inside libstdc++'s <regex>, which Catch2's
# implementation uses, in optimised builds with sanitizers; it is not in our code.
target_compile_options(sonata_catch_runner PRIVATE -Wall -Wextra
                       $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)
add_library(sonata_catch_main STATIC ${PROJECT_SOURCE_DIR}/tests/support/catch_main.cpp)
target_link_libraries(sonata_catch_main PUBLIC sonata_catch_runner)
target_compile_options(sonata_catch_main PRIVATE -Wall -Wextra)
