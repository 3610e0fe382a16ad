#include "tests/support/error_of.h"

#include "base/error.h"

namespace sonata::testing {

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

}  // namespace sonata::testing
