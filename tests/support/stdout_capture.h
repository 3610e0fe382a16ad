#pragma once
// What a call prints to stdout (the trainer's progress lines) or stderr, for tests that check a
// message a user reads. `file` holds the capture; stdout is restored even when `call` throws.
#include <functional>
#include <string>

namespace sonata::testing {

std::string stdout_of(const std::string& file, const std::function<void()>& call);
// The same for stderr (notices a run prints whatever --progress says).
std::string stderr_of(const std::string& file, const std::function<void()>& call);

}  // namespace sonata::testing
