#pragma once
// The message of the sparsetrain::Error a call throws, or "no error": tests compare whole
// messages, so a changed or missing diagnostic fails loudly.
#include <functional>
#include <string>

#include "sparsetrain/core/error.h"

namespace sparsetrain::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace sparsetrain::testing
