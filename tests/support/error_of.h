#pragma once
// The message of the sonata::Error that `call` throws, or "no error" when it returns: for
// tests that check what an error says (other exceptions pass through and fail the test).
#include <functional>
#include <string>

namespace sonata::testing {

std::string error_of(const std::function<void()>& call);

}  // namespace sonata::testing
