#pragma once
// How this binary was built: what, besides the config and the CPU, decides the bits of a run
// (docs/reliability.md#determinism-contract). Filled in by CMake (build_info.cpp.in).
#include <string_view>

namespace sparsetrain {

struct BuildInfo {
  std::string_view version;     // the project's version
  std::string_view compiler;    // e.g. "GNU 12.2.0"
  std::string_view build_type;  // e.g. "Release"
  std::string_view flags;       // every flag that reaches code generation, e.g. "-O3 -DNDEBUG -fno-math-errno"
  bool native;                  // built with -march=native: code tuned to (and only for) the build machine
};

const BuildInfo& build_info();

}  // namespace sparsetrain
