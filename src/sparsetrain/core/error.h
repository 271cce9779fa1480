#pragma once
// One exception type for every user-facing failure. Messages name the thing that was wrong
// (file, key, offset, tensor name) and what was expected, so callers print e.what() as is.
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace sparsetrain {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace sparsetrain
